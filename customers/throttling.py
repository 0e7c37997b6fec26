"""Rate limits for the sign-in endpoints (DRF throttles on the Redis cache).

A throttle is a guard against abuse, not a correctness rule: when Redis is
unreachable the request goes through (logged), and the Postgres-side limits
(resend interval, attempts per code) still hold.
"""

from __future__ import annotations

import logging
from typing import Any

import redis
from rest_framework.request import Request
from rest_framework.throttling import ScopedRateThrottle

logger = logging.getLogger(__name__)


class FailOpenScopedRateThrottle(ScopedRateThrottle):
    """``ScopedRateThrottle`` (per client address, rates from
    ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"][view.throttle_scope]``) that lets
    requests through when the cache is down instead of answering 500."""

    def allow_request(self, request: Request, view: Any) -> bool:
        try:
            return super().allow_request(request, view)
        except redis.RedisError:
            logger.warning(
                "throttle %s skipped: cache unavailable", getattr(view, "throttle_scope", "?")
            )
            return True
