"""What each process records for Prometheus, and one-line ways to record it.

``GET /metrics`` (console/metrics.py) answers from two sources:

- the sale itself (queue, tickets, payments, the last admission tick),
  computed from Postgres and Redis at scrape time: the same numbers
  whichever process answers, and right after any restart;
- what processes did, recorded here as they do it: HTTP requests by route,
  admission ticks, claim attempts, webhooks, reconciliation heals, Redis
  errors, open WebSockets, Celery task runs.

Several processes serve one deployment (granian workers,
daphne, the Celery pool's children). With ``PROMETHEUS_MULTIPROC_DIR`` set
(``make run`` and docker compose set it) prometheus-client's multiprocess
mode keeps each process's values in a file of that directory and a scrape
adds them up, so a counter is the sum over every process of the host, and
survives a worker's restart. Without it (tests, one process) the values
live in the process. The directory is emptied when the processes of a host
start (``make run`` does it; compose mounts a fresh tmpfs).
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, ParamSpec, TypeVar

from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics

from fairqueue.errors import AppError

P = ParamSpec("P")
T = TypeVar("T")

# A *_created series per labelled child doubles what is scraped, for nothing
# our dashboards or alerts read.
disable_created_metrics()

_FAST = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_SLOW = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)

HTTP_REQUEST_DURATION = Histogram(
    "fairqueue_http_request_duration_seconds",
    "HTTP requests by route (the URL pattern, not the path), method and status.",
    ["method", "route", "status"],
    buckets=_FAST,
)
ADMISSION_TICK_DURATION = Histogram(
    "fairqueue_admission_tick_duration_seconds",
    "One admission tick of one event: expire, admit in Postgres, move in Redis, push.",
    ["event"],
    buckets=_FAST,
)
TASK_DURATION = Histogram(
    "fairqueue_task_duration_seconds",
    "Celery task runs by task name (a skipped single-flight run included).",
    ["task"],
    buckets=_SLOW,
)
CLAIMS = Counter(
    "fairqueue_claims",
    "Claim attempts by result: created, or the error code that refused it.",
    ["result"],
)
WEBHOOKS = Counter(
    "fairqueue_webhooks",
    "Gateway webhooks by outcome: processed, duplicate, ignored, unknown_reference, "
    "or the error code that refused it (invalid_signature, ...).",
    ["outcome"],
)
RECONCILE_HEALS = Counter(
    "fairqueue_reconcile_heals",
    "Redis brought back to Postgres truth, by kind: *_rebuilt = a missing key restored "
    "(routine after a Redis wipe), *_divergence = a value that disagreed.",
    ["kind"],
)
REDIS_ERRORS = Counter(
    "fairqueue_redis_errors",
    "Redis failures caught by the Redis-failure rule, by store operation.",
    ["operation"],
)
WEBSOCKET_CONNECTIONS = Gauge(
    "fairqueue_websocket_connections",
    "Queue WebSockets open now (summed over the live daphne processes).",
    multiprocess_mode="livesum",
)

# Every family has a sample from the first scrape, so that alerts and
# dashboards tell "none" from "not scraped", and a label value known in
# advance starts at zero, so that its first count is an increase (a series
# born at 1 shows none to rate() or increase()). Known values: the heal kinds
# here, the results ``counted`` declares, the operations under the Redis
# failure rule (``expose_redis_operation``). Where the values only come as
# they happen (routes, events, tasks), one child with empty values stands
# for them: Prometheus reads it as a zero without labels.
HEAL_KINDS = ("inventory_rebuilt", "inventory_divergence", "queue_rebuilt", "queue_divergence")
for _kind in HEAL_KINDS:
    RECONCILE_HEALS.labels(_kind)
HTTP_REQUEST_DURATION.labels("", "", "")
ADMISSION_TICK_DURATION.labels("")
TASK_DURATION.labels("")


def _error_code(exc: BaseException) -> str:
    return exc.code if isinstance(exc, AppError) else "error"


def counted(
    counter: Counter, result: str | Callable[[Any], str], *, expected: Iterable[str] = ()
) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Count every call of a service by its result: ``result`` (a label, or a
    function of the return value) when it returns, the ``AppError`` code when
    it refuses, ``error`` when it fails otherwise. ``result`` (a label),
    ``error`` and the ``expected`` results (the codes it refuses with, the
    values the function gives) are counted from zero."""
    for label in (*([result] if isinstance(result, str) else []), "error", *expected):
        counter.labels(label)

    def decorate(fn: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
            try:
                value = fn(*args, **kwargs)
            except Exception as exc:
                counter.labels(_error_code(exc)).inc()
                raise
            counter.labels(result if isinstance(result, str) else result(value)).inc()
            return value

        return wrapper

    return decorate


def timed(histogram: Histogram, *, label_from: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Observe each call's duration, labelled with its keyword argument
    ``label_from`` (e.g. the event id of a tick)."""

    def decorate(fn: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                histogram.labels(str(kwargs.get(label_from, ""))).observe(
                    time.perf_counter() - started
                )

        return wrapper

    return decorate


def heal(kind: str, count: int = 1) -> None:
    """Count ``count`` things reconciliation put right (see RECONCILE_HEALS)."""
    if count:
        RECONCILE_HEALS.labels(kind).inc(count)


def redis_operation(what: str) -> str:
    """A bounded label from what the Redis-failure rule names: a store method
    (``QueueStore.position``) or a lock, without the key's event id."""
    return re.split(r" fq:|;| \{", what, maxsplit=1)[0].strip() or "unknown"


def count_redis_error(what: str) -> None:
    REDIS_ERRORS.labels(redis_operation(what)).inc()


def expose_redis_operation(what: str) -> None:
    """An operation under the Redis failure rule: its errors counted from zero."""
    REDIS_ERRORS.labels(redis_operation(what))


ASGIApp = Callable[[dict, Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Any]


class CountWebSockets:
    """ASGI middleware: a WebSocket counts from its accept until its
    connection's application returns (the client left or was closed)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        accepted = False

        async def counting_send(message: dict) -> None:
            nonlocal accepted
            if message["type"] == "websocket.accept" and not accepted:
                accepted = True
                WEBSOCKET_CONNECTIONS.inc()
            await send(message)

        try:
            await self.app(scope, receive, counting_send)
        finally:
            if accepted:
                WEBSOCKET_CONNECTIONS.dec()
