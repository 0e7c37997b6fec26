from django.urls import path

from events.views import EventDetailView, EventListView, TierSeatMapView

urlpatterns = [
    path("events/", EventListView.as_view(), name="event-list"),
    path("events/<uuid:event_id>/", EventDetailView.as_view(), name="event-detail"),
    path(
        "events/<uuid:event_id>/tiers/<uuid:tier_id>/seats/",
        TierSeatMapView.as_view(),
        name="tier-seat-map",
    ),
]
