"""Rate limits: per client address (DRF throttle classes on the sign-in
endpoints) and per mailbox (the sign-in service), counted in Redis.

A limit is a guard against abuse, so it fails **closed**: when Redis cannot
count, the request is refused with 503 ``busy`` + Retry-After
(``fairqueue.redis.required``) rather than let through uncounted. Sign-in
during a Redis outage waits for Redis; nothing else does.

Sizing: a carrier NAT or a venue's Wi-Fi puts hundreds of people behind one
address, so the per-address limits are wide (THROTTLE_OTP_REQUEST: 60 a
minute) and the narrow limits are per mailbox (OTP_EMAIL_LIMITS: 5 codes an
hour, 20 a day). IPv6 clients count per /64 (fairqueue.clientip).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from fairqueue.clientip import client_key
from fairqueue.errors import RateLimited
from fairqueue.redis import RedisStore, required

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Rate:
    limit: int
    seconds: int


def rates_parse(spec: str) -> tuple[Rate, ...]:
    """``"60/minute,1200/hour"`` -> two rates (DRF's unit words: second,
    minute, hour, day; only their first letter counts)."""
    rates = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        count, _, unit = part.partition("/")
        rates.append(Rate(limit=int(count), seconds=_UNITS[unit.strip()[0].lower()]))
    return tuple(rates)


class RateLimitStore(RedisStore):
    scripts_dir = Path(__file__).parent / "lua"
    script_names = ("rate_limit",)

    @staticmethod
    def key(scope: str, ident: str, seconds: int) -> str:
        # One hash tag per identity: its windows are counted by one script.
        digest = hashlib.sha256(ident.encode()).hexdigest()[:32]
        return f"fq:rl:{{{scope}:{digest}}}:{seconds}"

    @required
    def hit(self, *, scope: str, ident: str, rates: tuple[Rate, ...]) -> float:
        """Count one request; 0 when allowed, else seconds until it would be."""
        if not rates:
            return 0.0
        wait_ms = self.scripts["rate_limit"](
            keys=[self.key(scope, ident, r.seconds) for r in rates],
            args=[v for r in rates for v in (r.limit, r.seconds * 1000)],
        )
        return int(wait_ms) / 1000


_store: RateLimitStore | None = None


def rate_limit_store() -> RateLimitStore:
    global _store
    if _store is None:
        _store = RateLimitStore()
    return _store


def rate_limit_hit(*, scope: str, ident: str, rates: tuple[Rate, ...]) -> None:
    """Count one request of ``ident`` against ``rates``; RateLimited (429,
    Retry-After) when over, RedisUnavailable (503) when Redis cannot count."""
    wait = rate_limit_store().hit(scope=scope, ident=ident, rates=rates)
    if wait > 0:
        retry_after = max(1, math.ceil(wait))
        raise RateLimited(
            "Too many requests; try again later.",
            details={"retry_after": retry_after},
            retry_after=retry_after,
        )


class ClientRateThrottle(BaseThrottle):
    """Per client address (an IPv6 /64), rates from
    ``settings.RATE_LIMITS[view.throttle_scope]``."""

    def allow_request(self, request: Request, view: Any) -> bool:
        scope = view.throttle_scope
        rate_limit_hit(
            scope=scope, ident=client_key(request), rates=rates_parse(settings.RATE_LIMITS[scope])
        )
        return True
