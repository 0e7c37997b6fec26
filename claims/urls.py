from django.urls import path

from claims.views import (
    ClaimDetailView,
    EventClaimCreateView,
    TicketCheckInView,
    TicketReturnView,
    TicketTransferView,
    TransferView,
)

urlpatterns = [
    path(
        "events/<uuid:event_id>/claims/", EventClaimCreateView.as_view(), name="event-claim-create"
    ),
    path("claims/<uuid:claim_id>/", ClaimDetailView.as_view(), name="claim-detail"),
    path(
        "events/<uuid:event_id>/tickets/check-in/",
        TicketCheckInView.as_view(),
        name="ticket-check-in",
    ),
    path("tickets/<str:code>/return/", TicketReturnView.as_view(), name="ticket-return"),
    path("tickets/<str:code>/transfer/", TicketTransferView.as_view(), name="ticket-transfer"),
    path("transfers/<uuid:transfer_id>/", TransferView.as_view(), name="transfer-detail"),
]
