from django.urls import path

from claims.views import ClaimDetailView, EventClaimCreateView, TicketCheckInView
from customers.authentication import token_signed
from fairqueue.lanes import PURCHASE, declare

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
]
