from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Console"

    def ready(self) -> None:
        # Celery's signal hooks (task timing, heartbeats, the workers'
        # metrics port), and every Redis failure counted as a metric.
        from console import worker  # noqa: F401
        from fairqueue.metrics import count_redis_error
        from fairqueue.redis import on_redis_failure

        on_redis_failure(count_redis_error)
