from django.urls import path

from queueing.consumers import QueueConsumer

websocket_urlpatterns = [
    path("ws/events/<uuid:event_id>/queue/", QueueConsumer.as_asgi()),
]
