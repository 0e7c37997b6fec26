from django.urls import path

from customers.authentication import token_signed
from events.views import EventDetailView, EventListView, TierSeatMapView
from fairqueue.lanes import WAITING, declare

urlpatterns = [
    path("events/", EventListView.as_view(), name="event-list"),
    path("events/<uuid:event_id>/", EventDetailView.as_view(), name="event-detail"),
    path(
        "events/<uuid:event_id>/tiers/<uuid:tier_id>/seats/",
        declare(TierSeatMapView.as_view(), WAITING, proof=token_signed),
        name="tier-seat-map",
    ),
]
