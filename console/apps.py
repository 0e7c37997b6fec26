from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Console"
    default = True


class FairQueueAdminConfig(admin_apps.AdminConfig):
    """``django.contrib.admin`` with the site of console/site.py (every admin
    action logged)."""

    default = False
    default_site = "console.site.AdminSite"
