from django.urls import path

from queueing.views import QueueLineStateView, QueuePositionView, QueueView, QueueWsTicketView
from queueing.waitlist_views import WaitlistView

urlpatterns = [
    path(
        "events/<uuid:event_id>/queue/state/",
        QueueLineStateView.as_view(),
        name="queue-state",
    ),
    path("events/<uuid:event_id>/queue/", QueueView.as_view(), name="queue"),
    path(
        "events/<uuid:event_id>/queue/position/",
        QueuePositionView.as_view(),
        name="queue-position",
    ),
    path("events/<uuid:event_id>/waitlist/", WaitlistView.as_view(), name="waitlist"),
    path(
        "events/<uuid:event_id>/queue/ws-ticket/",
        QueueWsTicketView.as_view(),
        name="queue-ws-ticket",
    ),
]
