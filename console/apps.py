from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Console"
    default = True

    def ready(self) -> None:
        # Celery's signal hooks (task timing, heartbeats, the workers'
        # metrics port), and every Redis failure counted as a metric, each
        # operation from zero.
        from console import worker  # noqa: F401
        from fairqueue.metrics import count_redis_error, expose_redis_operation
        from fairqueue.redis import on_redis_failure, on_redis_operation

        on_redis_failure(count_redis_error)
        on_redis_operation(expose_redis_operation)


class FairQueueAdminConfig(admin_apps.AdminConfig):
    """``django.contrib.admin`` with the site of console/site.py (every admin
    action logged)."""

    default = False
    default_site = "console.site.AdminSite"
