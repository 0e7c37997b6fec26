from django.urls import path

from claims.seatmap_views import TierSeatMapView
from claims.views import ClaimDetailView, EventClaimCreateView, TicketCheckInView

urlpatterns = [
    path(
        "events/<uuid:event_id>/claims/", EventClaimCreateView.as_view(), name="event-claim-create"
    ),
    path(
        "events/<uuid:event_id>/tiers/<uuid:tier_id>/seats/",
        TierSeatMapView.as_view(),
        name="tier-seat-map",
    ),
    path("claims/<uuid:claim_id>/", ClaimDetailView.as_view(), name="claim-detail"),
    path(
        "events/<uuid:event_id>/tickets/check-in/",
        TicketCheckInView.as_view(),
        name="ticket-check-in",
    ),
]
