"""Make Redis agree with Postgres, every reconciliation tick (invariant 2):
re-add what is missing, drop what Postgres no longer has."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping

import redis
from django.conf import settings

from events.domain import EventStatus
from events.models import Event
from fairqueue.locks import redis_lock
from fairqueue.metrics import heal
from queueing.domain import LIVE_STATUSES, QueueStatus
from queueing.models import QueueEntry
from queueing.services.close import queue_close
from queueing.services.rebuild import admitted_rows, count, waiting_rows
from queueing.store import queue_store

RECONCILE_LOCK_TTL_S = 120.0

logger = logging.getLogger(__name__)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _drop_stale(event_id: uuid.UUID | str, key: str, status: QueueStatus) -> int:
    """Remove members whose entry is no longer in ``status`` in Postgres."""
    store = queue_store()
    stale: list[str] = []
    for chunk in store.scan_members(key=key):
        ids = [m for m in chunk if _is_uuid(m)]
        keep = {
            str(c)
            for c in QueueEntry.objects.filter(
                event_id=event_id, status=status, customer_id__in=ids
            ).values_list("customer_id", flat=True)
        }
        stale.extend(member for member in chunk if member not in keep)
    return store.remove_many(key=key, members=stale) if stale else 0


def queue_reconcile_event(
    *, event_id: uuid.UUID | str, full: bool | None = None
) -> Mapping[str, int | str]:
    """Make Redis agree with Postgres for one event: re-add missing WAITING and
    ADMITTED entries, drop members that are neither any more.

    Cheap when nothing diverged: sizes are compared first and a set of the
    right size is left alone. Equal sizes can still hide a swap (one member
    lost, one stale), so every ``QUEUE_FULL_RECONCILE_SECONDS`` (default 300)
    a full pass re-sends every member and scans for stale ones. Runs under
    the admission lock so it never interleaves with a tick of the same event."""
    store = queue_store()
    with redis_lock(store.lock_key(event_id), ttl_s=RECONCILE_LOCK_TTL_S) as held:
        if held is None:
            return {"skipped": "locked"}
        if full is None:
            every = int(getattr(settings, "QUEUE_FULL_RECONCILE_SECONDS", 300))
            full = store.full_check_due(event_id=event_id, every_seconds=every)
        report = {"waiting_added": 0, "admitted_added": 0, "dropped": 0}
        checks = (
            (store.waiting_key(event_id), QueueStatus.WAITING, waiting_rows, "waiting_added"),
            (store.admitted_key(event_id), QueueStatus.ADMITTED, admitted_rows, "admitted_added"),
        )
        restored, diverged = 0, 0  # members put back into a missing set / fixed in one
        for key, status, rows, label in checks:
            in_pg = count(event_id, status)
            in_redis = store.r.zcard(key)
            if not full and in_redis == in_pg:
                continue
            if in_pg:
                report[label] = store.add_many(key=key, members=rows(event_id))
            held.renew()
            after = store.r.zcard(key)
            dropped = _drop_stale(event_id, key, status) if after > in_pg else 0
            report["dropped"] += dropped
            held.renew()
            # A full pass re-sends every member: what it added is what was missing.
            if in_redis == 0:
                restored += after
            else:
                diverged += max(0, after - in_redis) + dropped
        heal("queue_rebuilt", restored)
        heal("queue_divergence", diverged)
        if diverged:
            logger.warning("queue divergence healed event=%s %s", event_id, report)
        elif restored:
            logger.info("queue rebuilt event=%s %s", event_id, report)
        return report


def queue_reconcile_all() -> dict[str, Mapping[str, int | str]]:
    """Every live event; and entries left live on ended events (a join that
    raced ``event_end``) are closed."""
    reports: dict[str, Mapping[str, int | str]] = {}
    live = Event.objects.filter(
        status__in=[EventStatus.ACTIVE, EventStatus.PAUSED, EventStatus.SOLD_OUT]
    ).values_list("id", flat=True)
    for event_id in live:
        try:
            reports[str(event_id)] = queue_reconcile_event(event_id=event_id)
        except redis.RedisError:
            logger.warning("queue reconcile: redis unavailable event=%s", event_id)
    ended_with_live = (
        QueueEntry.objects.filter(
            status__in=LIVE_STATUSES,
            event__status=EventStatus.ENDED,
        )
        .values_list("event_id", flat=True)
        .distinct()
    )
    for event_id in ended_with_live:
        reports[str(event_id)] = {"closed": queue_close(event_id=event_id)}
    return reports
