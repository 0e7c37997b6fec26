from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "fairqueue.core"
    label = "core"
    verbose_name = "Customers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from fairqueue.core import schema  # noqa: F401  (registers the OpenAPI auth scheme)
