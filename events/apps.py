from django.apps import AppConfig


class EventsConfig(AppConfig):
    name = "events"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from events import schema  # noqa: F401  (registers the OpenAPI organizer scheme)
