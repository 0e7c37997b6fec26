"""Rate limits: per client address (DRF throttle classes on the sign-in
endpoints), per mailbox (the sign-in service), and per signed-in customer
(token buckets on WebSocket tickets and authenticated reads), counted in
Redis.

A limit is a guard against abuse, so it fails **closed**: when Redis cannot
count, the request is refused with 503 ``busy`` + Retry-After
(``fairqueue.redis.required``) rather than let through uncounted. Sign-in
during a Redis outage waits for Redis. The one exception follows the Redis
rule (fairqueue/redis.py): a customer's read that Postgres answers anyway
(position, me/, tickets) goes through uncounted rather than fail with
Redis; WebSocket tickets live in Redis, so theirs fails closed.

Sizing: a carrier NAT or a venue's Wi-Fi puts hundreds of people behind one
address, so the per-address limits are wide (THROTTLE_OTP_REQUEST: 60 a
minute) and the narrow limits are per mailbox (OTP_EMAIL_LIMITS: 5 codes an
hour, 20 a day). IPv6 clients count per /64 (fairqueue.clientip).
"""

from __future__ import annotations

import functools
import hashlib
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from customers.tokens import CustomerPrincipal
from fairqueue.clientip import client_key
from fairqueue.errors import RateLimited
from fairqueue.redis import RedisStore, best_effort, required

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


def _refuse_after(wait: float) -> None:
    """RateLimited (429, Retry-After) when ``wait`` seconds remain."""
    if wait > 0:
        retry_after = max(1, math.ceil(wait))
        raise RateLimited(
            "Too many requests; try again later.",
            details={"retry_after": retry_after},
            retry_after=retry_after,
        )


def rate_limit_hit(*, scope: str, ident: str, rates: tuple[Rate, ...]) -> None:
    """Count one request of ``ident`` against ``rates``; RateLimited (429,
    Retry-After) when over, RedisUnavailable (503) when Redis cannot count."""
    _refuse_after(rate_limit_store().hit(scope=scope, ident=ident, rates=rates))


class ClientRateThrottle(BaseThrottle):
    """Per client address (an IPv6 /64), rates from
    ``settings.RATE_LIMITS[view.throttle_scope]``."""

    def allow_request(self, request: Request, view: Any) -> bool:
        scope = view.throttle_scope
        rate_limit_hit(
            scope=scope, ident=client_key(request), rates=rates_parse(settings.RATE_LIMITS[scope])
        )
        return True


# --- token buckets per customer ---------------------------------------------------


@dataclass(frozen=True)
class Bucket:
    capacity: int  # requests at once
    per_second: float  # refilled


@functools.lru_cache(maxsize=16)  # a setting, parsed on every authenticated request
def bucket_parse(spec: str) -> Bucket:
    """``"120/minute,burst=60"``: refilled at 120 a minute, holding at most
    60 (without ``burst``: the rate's count)."""
    rate_spec, _, burst = spec.partition(",burst=")
    rates = rates_parse(rate_spec)
    if len(rates) != 1:
        raise ValueError(f"a bucket has one rate: {spec!r}")
    (rate,) = rates
    return Bucket(capacity=int(burst or rate.limit), per_second=rate.limit / rate.seconds)


class CustomerBucketStore(RedisStore):
    scripts_dir = Path(__file__).parent / "lua"
    script_names = ("token_bucket",)

    @staticmethod
    def key(scope: str, ident: str) -> str:
        return f"fq:tb:{{{scope}:{ident}}}"

    @staticmethod
    def args(bucket: Bucket, now_ms: float | None = None) -> list[Any]:
        """The script's arguments (``lua/bucket_take.lua``): a caller may take
        the token in a script of its own round trip (the position read)."""
        return [
            bucket.capacity,
            repr(bucket.per_second / 1000),
            repr(time.time() * 1000 if now_ms is None else now_ms),
        ]

    def _take(self, scope: str, ident: str, bucket: Bucket, now_ms: float | None) -> float:
        wait_ms = self.scripts["token_bucket"](
            keys=[self.key(scope, ident)], args=self.args(bucket, now_ms)
        )
        return int(wait_ms) / 1000

    @required
    def take(self, *, scope: str, ident: str, bucket: Bucket, now_ms: float | None = None) -> float:
        """Take a token: 0 when taken, else seconds until one is there.
        ``now_ms``: the caller's clock (the web servers', kept by NTP)."""
        return self._take(scope, ident, bucket, now_ms)

    @best_effort(0.0)
    def take_or_pass(
        self, *, scope: str, ident: str, bucket: Bucket, now_ms: float | None = None
    ) -> float:
        """``take``, or 0 (go ahead, uncounted) when Redis cannot count."""
        return self._take(scope, ident, bucket, now_ms)


_bucket_store: CustomerBucketStore | None = None


def customer_bucket_store() -> CustomerBucketStore:
    global _bucket_store
    if _bucket_store is None:
        _bucket_store = CustomerBucketStore()
    return _bucket_store


# The bucket of a customer's authenticated reads.
READS = "reads"
# Buckets whose requests Postgres answers without Redis: uncounted, not
# refused, while Redis cannot count.
POSTGRES_ANSWERS = frozenset({READS})


@dataclass(frozen=True)
class BucketInScript:
    """The read bucket of a customer, for a script that takes its token in
    its own round trip (``lua/bucket_take.lua``): its key and arguments."""

    key: str
    args: list[Any]


def read_bucket_in_script(*, customer_id: object) -> BucketInScript:
    bucket = bucket_parse(settings.CUSTOMER_BUCKETS[READS])
    return BucketInScript(
        key=CustomerBucketStore.key(READS, str(customer_id)),
        args=CustomerBucketStore.args(bucket),
    )


# A request whose read token was taken in its own script carries this
# attribute: the throttle then counts nothing twice.
BUCKET_TAKEN = "customer_bucket_taken"


def read_bucket_settle(request: Any, *, wait_ms: int) -> None:
    """The answer of a read token taken in a script: the throttle counts
    this request no more; RateLimited (429, Retry-After) when it was empty."""
    setattr(request, BUCKET_TAKEN, True)
    _refuse_after(int(wait_ms) / 1000)


def customer_bucket_take(*, scope: str, customer_id: object) -> None:
    """One request of this customer from ``settings.CUSTOMER_BUCKETS[scope]``:
    RateLimited (429, Retry-After) when it is empty."""
    store = customer_bucket_store()
    take = store.take_or_pass if scope in POSTGRES_ANSWERS else store.take
    bucket = bucket_parse(settings.CUSTOMER_BUCKETS[scope])
    _refuse_after(take(scope=scope, ident=str(customer_id), bucket=bucket))


class CustomerBucketThrottle(BaseThrottle):
    """Per signed-in customer, so one token cannot be looped: the view's
    ``customer_bucket`` (WebSocket tickets: each one a Redis key), else
    ``reads`` for any authenticated read. Writes have their own guards
    (admission, idempotency, one claim per customer); anonymous requests
    are not a customer's."""

    @staticmethod
    def scope(view: Any, method: str) -> str | None:
        bucket: str | None = getattr(view, "customer_bucket", None)
        return bucket or (READS if method.upper() in SAFE_METHODS else None)

    @classmethod
    def throttles(cls, view_class: Any, method: str) -> bool:
        """Whether a customer's request may meet a bucket (the schema's 429)."""
        return cls.scope(view_class, method) is not None

    def allow_request(self, request: Request, view: Any) -> bool:
        principal = request.user
        scope = self.scope(view, request.method or "")
        if getattr(request, BUCKET_TAKEN, False):
            return True  # taken with the read itself (read_bucket_settle)
        if isinstance(principal, CustomerPrincipal) and scope is not None:
            customer_bucket_take(scope=scope, customer_id=principal.id)
        return True
