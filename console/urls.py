from django.urls import path

from console.door import door_count, door_page
from console.health import healthz, readyz
from console.metrics import metrics_view

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("events/<uuid:event_id>/check-in/", door_page, name="check-in-page"),
    path("events/<uuid:event_id>/check-in/count", door_count, name="check-in-count"),
]
