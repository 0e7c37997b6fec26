"""Health, readiness and metrics are answered here (``console.metrics`` for
``GET /metrics``).

``GET /healthz`` is liveness: this process is up and reaches Postgres and
Redis; 503 when either is unreachable. The container probes ask it.

``GET /readyz``: is the sale moving? 503 as soon as it is not. Readiness adds
to liveness the two things a flash sale silently stops without, and that no
web process notices by itself:

- **admission ticks**: for every event on sale (ACTIVE, inside its window)
  the last tick is at most 3 admission intervals old (15 s by default). A
  dead beat, or workers that all died or hang, show here within that time.
  A tick counts whatever it admitted: at the height of a sale every free
  ticket is held and ticks admit nobody, and that is a sale moving, not a
  stall. An event that just went on sale gets the same grace from that
  moment.
- **a Celery worker answers** a broadcast ping within
  ``READYZ_WORKER_TIMEOUT_SECONDS`` (1 s): claim expiry, reconciliation and
  payments need workers even while no event is on sale.

Meant for monitoring and for an orchestrator's overview, not to take a web
process out of a load balancer: a dead worker is not cured by hiding web.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from celery import current_app
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.utils import timezone

from console.selectors import events_on_sale
from fairqueue.redis import cluster_url, get_layer_redis, get_redis
from queueing.selectors import admission_last_ticks

STALE_AFTER_TICKS = 3


def dependency_checks() -> dict[str, str]:
    """Postgres and Redis answer a trivial command: "ok" or the error's type."""
    checks = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["postgres"] = "ok"
    except Exception as exc:  # any failure means degraded
        checks["postgres"] = f"error: {type(exc).__name__}"
    try:
        get_layer_redis().ping()
        checks["redis"] = "ok"
    except Exception as exc:
        checks["redis"] = f"error: {type(exc).__name__}"
    if cluster_url():  # the hot data's cluster: every primary answers
        try:
            get_redis().ping()
            checks["redis_cluster"] = "ok"
        except Exception as exc:
            checks["redis_cluster"] = f"error: {type(exc).__name__}"
    return checks


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: this process answers and reaches both stores; 503 when
    either is unreachable. Whether the sale is moving is /readyz's question."""
    checks = dependency_checks()
    healthy = all(v == "ok" for v in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "degraded", "checks": checks},
        status=200 if healthy else 503,
    )


def admission_check(now: datetime | None = None) -> str:
    """ "ok", or which events on sale have not ticked for too long."""
    now = now or timezone.now()
    limit = timedelta(seconds=STALE_AFTER_TICKS * settings.ADMISSION_INTERVAL_SECONDS)
    stale = []
    on_sale = list(events_on_sale(now).values_list("pk", "sale_start", "updated_at"))
    ticks = admission_last_ticks(event_ids=[event_id for event_id, _, _ in on_sale])
    for event_id, sale_start, updated_at in on_sale:
        last = ticks.get(event_id)
        # Ticks are owed from when the event went on sale (or was last changed).
        since = max(filter(None, (last, sale_start, updated_at)))
        if now - since > limit:
            age = "never" if last is None else f"{(now - last).total_seconds():.0f} s ago"
            stale.append(f"{event_id} (last tick {age})")
    if stale:
        return f"error: no admission tick for over {limit.total_seconds():g} s: " + ", ".join(stale)
    return "ok" if on_sale else "ok (no event on sale)"


def workers_check() -> str:
    """ "ok" when at least one Celery worker answers a ping."""
    timeout = settings.READYZ_WORKER_TIMEOUT_SECONDS
    try:
        replies = current_app.control.ping(timeout=timeout, limit=1)
    except Exception as exc:  # the broker itself is unreachable
        return f"error: {type(exc).__name__}"
    if not replies:
        return f"error: no Celery worker answered within {timeout:g} s"
    return "ok"


def readiness() -> dict[str, str]:
    checks = dependency_checks()
    if checks["postgres"] != "ok" or checks["redis"] != "ok":
        # Both other checks read Postgres or Redis: they would only fail again.
        return {**checks, "admission": "unknown", "workers": "unknown"}
    return {**checks, "admission": admission_check(), "workers": workers_check()}


def readyz(request: HttpRequest) -> JsonResponse:
    checks = readiness()
    ready = all(v.startswith("ok") for v in checks.values())
    return JsonResponse(
        {"status": "ready" if ready else "not_ready", "checks": checks},
        status=200 if ready else 503,
    )
