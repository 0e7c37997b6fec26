from django.urls import path

from console.health import readyz
from console.metrics import metrics_view

urlpatterns = [
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
]
