from django.urls import path

from queueing.views import QueuePositionView, QueueView

urlpatterns = [
    path("events/<uuid:event_id>/queue/", QueueView.as_view(), name="queue"),
    path(
        "events/<uuid:event_id>/queue/position/",
        QueuePositionView.as_view(),
        name="queue-position",
    ),
]
