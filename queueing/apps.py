from django.apps import AppConfig


class QueueingConfig(AppConfig):
    name = "queueing"
    default_auto_field = "django.db.models.BigAutoField"
