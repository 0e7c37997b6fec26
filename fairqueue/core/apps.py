from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "fairqueue.core"
    label = "core"
    verbose_name = "Customers"
    default_auto_field = "django.db.models.BigAutoField"
