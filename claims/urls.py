from django.urls import path

from claims.views import ClaimDetailView, EventClaimCreateView, TicketCheckInView

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
]
