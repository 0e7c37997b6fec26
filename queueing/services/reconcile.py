"""Make Redis agree with Postgres, every reconciliation tick (invariant 2):
re-add what is missing, drop what Postgres no longer has."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from datetime import timedelta

from django.utils import timezone

from events.domain import LIVE_STATUSES as EVENT_LIVE_STATUSES
from events.domain import EventStatus
from events.models import Event
from fairqueue.locks import redis_lock
from fairqueue.metrics import heal
from fairqueue.redis import RedisUnavailable
from queueing.domain import LIVE_STATUSES, QueueStatus
from queueing.models import QueueEntry
from queueing.services.close import queue_close
from queueing.services.rebuild import admitted_rows, count, waiting_rows
from queueing.store import queue_store

RECONCILE_LOCK_TTL_S = 120.0
# Sizes that agree can hide a swap (one member lost, one stale): every member
# is compared this often; in between, a set of the right size is left alone.
FULL_RECONCILE_SECONDS = 300
# Ended events whose Redis sets the reconciliation drops again (a write that
# raced the end of the sale may have put them back).
ENDED_SWEEP = timedelta(hours=1)

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
    lost, one stale), so every ``FULL_RECONCILE_SECONDS``
    a full pass re-sends every member and scans for stale ones. Runs under
    the admission lock so it never interleaves with a tick of the same event.

    The waiting set then holds the whole line: the line marker is set (see
    ``queueing.store``).

    The rows it writes were read before the writes: if the sale ended
    meanwhile (``queue_close`` deleted the sets), they would bring an ended
    line back. So after writing, it looks at the event again and drops the
    sets of one that is no longer live. Raises RedisUnavailable when Redis
    goes away midway."""
    store = queue_store()
    with redis_lock(store.lock_key(event_id), ttl_s=RECONCILE_LOCK_TTL_S) as held:
        if held is None:
            return {"skipped": "locked"}
        if not held.in_redis:
            return {"skipped": "redis_unavailable"}
        if full is None:
            full = store.full_check_due(event_id=event_id, every_seconds=FULL_RECONCILE_SECONDS)
        report = {"waiting_added": 0, "admitted_added": 0, "dropped": 0}
        checks = (
            (store.waiting_key(event_id), QueueStatus.WAITING, waiting_rows, "waiting_added"),
            (store.admitted_key(event_id), QueueStatus.ADMITTED, admitted_rows, "admitted_added"),
        )
        restored, diverged = 0, 0  # members put back into a missing set / fixed in one
        lost = not store.line_built(event_id=event_id)  # a wipe: the sets are restored
        for key, status, rows, label in checks:
            in_pg = count(event_id, status)
            in_redis = store.size(key=key)
            if not full and in_redis == in_pg:
                continue
            if in_pg:
                report[label] = store.add_many(key=key, members=rows(event_id))
            held.renew()
            after = store.size(key=key)
            dropped = _drop_stale(event_id, key, status) if after > in_pg else 0
            report["dropped"] += dropped
            held.renew()
            # A full pass re-sends every member: what it added is what was missing.
            if in_redis == 0 or lost:
                restored += after
            else:
                diverged += max(0, after - in_redis) + dropped
        store.line_mark(event_id=event_id)
        wrote = report["waiting_added"] or report["admitted_added"]
        if wrote and not Event.objects.filter(pk=event_id, status__in=EVENT_LIVE_STATUSES).exists():
            store.drop_event(event_id=event_id)
            report["ended"] = True
            return report
        heal("queue_rebuilt", restored)
        heal("queue_divergence", diverged)
        if diverged:
            logger.warning("queue divergence healed event=%s %s", event_id, report)
        elif restored:
            logger.info("queue rebuilt event=%s %s", event_id, report)
        return report


def queue_reconcile_all() -> dict[str, Mapping[str, int | str]]:
    """Every live event; entries left live on ended events (a join that
    raced ``event_end``) are closed; and the Redis sets of events that ended
    in the last hour are dropped again."""
    reports: dict[str, Mapping[str, int | str]] = {}
    live = Event.objects.filter(status__in=EVENT_LIVE_STATUSES).values_list("id", flat=True)
    for event_id in live:
        try:
            reports[str(event_id)] = queue_reconcile_event(event_id=event_id)
        except RedisUnavailable:
            reports[str(event_id)] = {"skipped": "redis_unavailable"}
    now = timezone.now()
    ended_with_live = (
        QueueEntry.objects.filter(
            status__in=LIVE_STATUSES,
            event__status=EventStatus.ENDED,
        )
        # A waiting-list offer outlives the sale while returns are open.
        .exclude(offer_tier__isnull=False, event__returns_until__gt=now)
        .values_list("event_id", flat=True)
        .distinct()
    )
    for event_id in ended_with_live:
        reports[str(event_id)] = {"closed": queue_close(event_id=event_id)}
    recently_ended = Event.objects.filter(
        status=EventStatus.ENDED, updated_at__gte=now - ENDED_SWEEP
    ).values_list("id", flat=True)
    store = queue_store()
    for event_id in recently_ended:
        store.drop_event(event_id=event_id)
    return reports
