"""Template context for every page (settings TEMPLATES context_processors)."""

from django.conf import settings
from django.http import HttpRequest


def payments_sandbox(request: HttpRequest) -> dict[str, bool]:
    """Pages (the admin's too) show a banner while payments are not real."""
    return {"payments_sandbox": settings.PAYMENTS_SANDBOX}
