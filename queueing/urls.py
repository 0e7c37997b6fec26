from django.urls import path

from queueing.views import QueueLineStateView, QueuePositionView, QueueView, QueueWsTicketView

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
    path(
        "events/<uuid:event_id>/queue/ws-ticket/",
        QueueWsTicketView.as_view(),
        name="queue-ws-ticket",
    ),
]
