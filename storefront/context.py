"""Template context for every page (settings TEMPLATES context_processors)."""

from django.conf import settings
from django.http import HttpRequest

from fairqueue.challenge import challenge_enabled


def payments_sandbox(request: HttpRequest) -> dict[str, object]:
    """Pages (the admin's too) show a banner while payments are not real,
    and the pages that sign in or join render the bot challenge when on."""
    return {
        "payments_sandbox": settings.PAYMENTS_SANDBOX,
        "challenge": (
            {"site_key": settings.CHALLENGE_SITE_KEY, "script_url": settings.CHALLENGE_SCRIPT_URL}
            if challenge_enabled()
            else None
        ),
    }
