from django.urls import path

from claims.views import (
    ClaimDetailView,
    EventClaimCreateView,
    TicketCheckInView,
    TicketReturnView,
    TicketTransferView,
    TransferView,
)
from customers.authentication import token_signed
from fairqueue.lanes import PURCHASE, WAITING, declare

urlpatterns = [
    path(
        "events/<uuid:event_id>/claims/",
        declare(EventClaimCreateView.as_view(), PURCHASE, proof=token_signed),
        name="event-claim-create",
    ),
    path(
        "claims/<uuid:claim_id>/",
        declare(ClaimDetailView.as_view(), PURCHASE, proof=token_signed),
        name="claim-detail",
    ),
    path(
        "events/<uuid:event_id>/tickets/check-in/",
        TicketCheckInView.as_view(),
        name="ticket-check-in",
    ),
    # A holder's own tickets: the account's lane, like their ticket list.
    path(
        "tickets/<str:code>/return/",
        declare(TicketReturnView.as_view(), WAITING, proof=token_signed),
        name="ticket-return",
    ),
    path(
        "tickets/<str:code>/transfer/",
        declare(TicketTransferView.as_view(), WAITING, proof=token_signed),
        name="ticket-transfer",
    ),
    path(
        "transfers/<uuid:transfer_id>/",
        declare(TransferView.as_view(), WAITING, proof=token_signed),
        name="transfer-detail",
    ),
]
