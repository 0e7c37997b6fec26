"""Absolute URLs of this site for places outside a page: the payment
gateway's callback, links in emails.

``PUBLIC_BASE_URL`` wins when it is set: production refuses to start without
an https one (config/safety.py), so no email there links to the server's own
address. Otherwise (development) a link follows the host the customer used,
so a phone on the LAN that opened ``http://192.168.1.20:8000/`` is sent back
there after paying, not to a ``localhost`` it cannot reach. The host has
passed ``ALLOWED_HOSTS`` (``request.get_host``), and a customer can only
point their own callback at a host they already use.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def public_base_url(request: HttpRequest | None = None) -> str:
    if settings.PUBLIC_BASE_URL:
        return settings.PUBLIC_BASE_URL.rstrip("/")
    if request is not None:
        return f"{request.scheme}://{request.get_host()}"
    # No request (a background task) and no setting: the local default.
    return f"http://localhost:{settings.PORT}"


def public_url(path: str, request: HttpRequest | None = None) -> str:
    return public_base_url(request) + "/" + path.lstrip("/")
