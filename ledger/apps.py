from django.apps import AppConfig


class LedgerConfig(AppConfig):
    name = "ledger"
    verbose_name = "Purchase accounts"
    default_auto_field = "django.db.models.BigAutoField"
