"""Who the client is, for rate limits, admin login limits and the bot
challenge: one rule everywhere.

``NUM_PROXIES`` proxies in front of the app (nginx in docker compose: 1) each
append the address they saw to ``X-Forwarded-For``; the client is the entry
the nearest trusted proxy wrote (DRF's rule). With no proxy the client is
``REMOTE_ADDR`` and the header is ignored, or anyone could pick a new
identity on every request.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest

IPV6_PREFIX = 64  # one subscriber's network: a /64 costs nothing to hop around in


def client_ip(request: HttpRequest) -> str:
    remote = request.META.get("REMOTE_ADDR", "")
    proxies = settings.NUM_PROXIES
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies > 0 and forwarded:
        hops = [hop.strip() for hop in forwarded.split(",")]
        return hops[-min(proxies, len(hops))] or remote
    return remote


def client_key(request: HttpRequest) -> str:
    """The identity a per-client limit counts: the IPv4 address, or the /64
    network of an IPv6 address (one home or phone gets a whole /64)."""
    raw = client_ip(request)
    try:
        address = ipaddress.ip_address(raw)
    except ValueError:
        return f"raw:{raw[:64]}"
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, IPV6_PREFIX), strict=False))
    return str(address)
