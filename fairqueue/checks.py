"""System checks of the shared plumbing (registered by storefront's AppConfig)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks
from django.middleware.csrf import CsrfViewMiddleware
from django.utils.module_loading import import_string


def csrf_middleware_check(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Django's deploy check security.W003 looks for CsrfViewMiddleware by
    its dotted path and so cannot see ``PagesCsrfViewMiddleware`` (settings
    silence it); this check asks the real question instead: is CSRF
    protection (Django's middleware or a subclass) installed?"""
    for path in settings.MIDDLEWARE:
        if issubclass(import_string(path), CsrfViewMiddleware):
            return []
    return [
        checks.Warning(
            "No CSRF middleware (CsrfViewMiddleware or a subclass) is in MIDDLEWARE: "
            "the admin and the pages are open to cross-site request forgery.",
            id="fairqueue.W003",
        )
    ]
