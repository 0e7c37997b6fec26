from django.apps import AppConfig


class CustomersConfig(AppConfig):
    name = "customers"
    # The label this app had when it lived in fairqueue/core: kept so that its
    # tables (core_*) and every migration that points at it stay valid.
    label = "core"
    verbose_name = "Customers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from customers import schema  # noqa: F401  (registers the OpenAPI auth scheme)
