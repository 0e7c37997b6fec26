from django.apps import AppConfig


class StorefrontConfig(AppConfig):
    name = "storefront"
    verbose_name = "Storefront"

    def ready(self) -> None:
        from storefront import receivers  # noqa: F401  (connects the confirmation email)
