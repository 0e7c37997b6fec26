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

An answer nothing marked (no ``csp_*`` decorator on its view, no nonce
asked for) gets the headers these settings make, built once per settings
rather than once per answer (every API answer: building them cost about a
tenth of a position read's CPU); Django's ``setting_changed`` (``override_settings``,
the tests' ``settings``) builds them again. A marked answer is django-csp's
to build.
"""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import urlsplit

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.exceptions import CSPNonceError
from csp.middleware import CheckableLazyObject, CSPMiddleware, PolicyParts
from csp.utils import build_policy
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
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


# The settings the headers are made of (django-csp's and site_sources').
_POLICY_SETTINGS = frozenset(
    {
        "CONTENT_SECURITY_POLICY",
        "CONTENT_SECURITY_POLICY_REPORT_ONLY",
        "WEBSOCKET_PUBLIC_URL",
        "WS_PORT",
        "CHALLENGE_PROVIDER",
        "CHALLENGE_SCRIPT_URL",
    }
)
# What django-csp's view decorators leave on an answer.
_MARKS = tuple(
    f"_csp_{mark}{suffix}"
    for mark in ("config", "update", "replace", "exempt")
    for suffix in ("", "_ro")
)
# django-csp leaves Django's debug pages alone.
_DEBUG_PAGES = (404, 500)


@functools.cache
def _site_headers() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(header, policy, path prefixes it is not given to) of an unmarked
    answer, as django-csp builds them with our ``get_policy_parts``."""
    made = []
    for header, setting, policy in (
        (HEADER, "CONTENT_SECURITY_POLICY", site_policy()),
        (HEADER_REPORT_ONLY, "CONTENT_SECURITY_POLICY_REPORT_ONLY", build_policy(report_only=True)),
    ):
        if policy:
            prefixes = (getattr(settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES")
            made.append((header, policy, tuple(prefixes or ())))
    return tuple(made)


@receiver(setting_changed)
def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in _POLICY_SETTINGS:
        _site_headers.cache_clear()


def _nonce_after_answer() -> None:
    raise CSPNonceError(
        "The answer's Content-Security-Policy is already written: a nonce now would be in none."
    )


class SitePolicyMiddleware(CSPMiddleware):
    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        """django-csp's, with the headers of an unmarked answer built once."""
        marked = any(hasattr(response, mark) for mark in _MARKS)
        if marked or getattr(request, "_csp_nonce", None) is not None:
            return super().process_response(request, response)
        if response.status_code in _DEBUG_PAGES and settings.DEBUG:
            return response
        for header, policy, excluded in _site_headers():
            if header not in response and not request.path_info.startswith(excluded):
                response[header] = policy
        # As django-csp: a nonce asked for after the header was written fails loudly.
        request.csp_nonce = CheckableLazyObject(_nonce_after_answer)  # type: ignore[attr-defined]  # django-csp's attribute, set on any request
        return response

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
