"""The Content-Security-Policy of every answer (django-csp).

The fixed part is ``CONTENT_SECURITY_POLICY`` in the settings: scripts from
our own origin only (no inline script, no ``eval``), nothing framing us, no
plugins, forms posting to ourselves. Styles may be inline (the pages' and the
admin's ``style`` attributes and blocks): a style cannot run code.

What follows other settings is added per request, so that it is right
whatever the settings are when the page is served:

- the queue WebSocket, when it is not on the page's own origin
  (``WEBSOCKET_PUBLIC_URL``, or ``WS_PORT`` beside the web server under
  `make run`, on whatever host the browser used);
- the bot challenge's script and frame (``CHALLENGE_SCRIPT_URL``), when on.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from csp.middleware import CSPMiddleware, PolicyParts
from csp.utils import build_policy
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase

from fairqueue.challenge import challenge_enabled


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def site_sources() -> dict[str, list[str]]:
    """The sources the settings add to the fixed policy."""
    sources: dict[str, list[str]] = {}
    if settings.WEBSOCKET_PUBLIC_URL:
        sources["connect-src"] = [_origin(settings.WEBSOCKET_PUBLIC_URL)]
    elif settings.WS_PORT:
        sources["connect-src"] = [f"ws://*:{settings.WS_PORT}", f"wss://*:{settings.WS_PORT}"]
    if challenge_enabled():
        challenge = _origin(settings.CHALLENGE_SCRIPT_URL)
        sources["script-src"] = sources["frame-src"] = [challenge]
    return sources


def site_policy() -> str:
    """The header an answer gets (for answers made outside Django's
    middleware: queueing/wsgi.py)."""
    return build_policy(update=site_sources())


class SitePolicyMiddleware(CSPMiddleware):
    def get_policy_parts(
        self, request: HttpRequest, response: HttpResponseBase, report_only: bool = False
    ) -> PolicyParts:
        parts = super().get_policy_parts(request, response, report_only=report_only)
        if not report_only:
            update = {key: list(value) for key, value in (parts.update or {}).items()}
            for key, values in site_sources().items():
                update[key] = [*update.get(key, []), *values]
            parts.update = update
        return parts
