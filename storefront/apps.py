from django.apps import AppConfig
from django.core import checks

from fairqueue.checks import csrf_middleware_check


class StorefrontConfig(AppConfig):
    name = "storefront"
    verbose_name = "Storefront"

    def ready(self) -> None:
        from storefront import receivers  # noqa: F401  (connects the buyer's emails)
        # The pages and the admin are what CSRF protects.
        checks.register(csrf_middleware_check, checks.Tags.security, deploy=True)
