"""Redis waiting and admitted sets from Postgres (invariant 2).

``queue_rebuild`` puts back what is missing (worker start, ``rebuild_redis``);
``queue_reconcile_event`` also drops what Postgres no longer has (beat). Both
compare sizes first, so they cost two COUNTs and two ZCARDs when nothing
diverged, and stream the rows in pipelined batches of 10,000 when it did.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator

import redis
from django.conf import settings
from django.db import connection

from events.domain import EventStatus
from events.models import Event
from queueing.domain import LIVE_STATUSES, QueueStatus
from queueing.models import QueueEntry
from queueing.store import REBUILD_BATCH, queue_store

logger = logging.getLogger(__name__)

_TABLE = QueueEntry._meta.db_table


def _rows(event_id: uuid.UUID | str, status: QueueStatus, score_sql: str) -> Iterator[tuple]:
    """(customer id as text, score) of every entry in ``status``, streamed
    through a server-side cursor (a million rows never sit in memory)."""
    sql = (
        f"SELECT customer_id::text, {score_sql} FROM {_TABLE} "  # noqa: S608
        "WHERE event_id = %s AND status = %s"
    )
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, [event_id, status.value])
        while True:
            batch = cursor.fetchmany(REBUILD_BATCH)
            if not batch:
                return
            yield from batch


def _waiting_rows(event_id: uuid.UUID | str) -> Iterator[tuple]:
    return _rows(event_id, QueueStatus.WAITING, "score")


def _admitted_rows(event_id: uuid.UUID | str) -> Iterator[tuple]:
    # Score = admission expiry in ms, the same as the admission tick writes.
    return _rows(
        event_id,
        QueueStatus.ADMITTED,
        "(floor(extract(epoch from admission_expires_at) * 1000))::bigint",
    )


def _count(event_id: uuid.UUID | str, status: QueueStatus) -> int:
    return QueueEntry.objects.filter(event_id=event_id, status=status).count()


def queue_rebuild(*, event_id: uuid.UUID | str) -> dict:
    """Re-add the waiting and admitted sets where Redis has fewer members
    than Postgres, with their exact scores (so the exact order). Idempotent:
    ZADD of the same member and score changes nothing."""
    store = queue_store()
    started = time.perf_counter()
    report: dict = {"waiting_added": 0, "admitted_added": 0}
    waiting_pg = _count(event_id, QueueStatus.WAITING)
    admitted_pg = _count(event_id, QueueStatus.ADMITTED)
    waiting_redis, admitted_redis = store.sizes(event_id=event_id)
    if waiting_redis < waiting_pg:
        report["waiting_added"] = store.add_many(
            key=store.waiting_key(event_id), members=_waiting_rows(event_id)
        )
    if admitted_redis < admitted_pg:
        report["admitted_added"] = store.add_many(
            key=store.admitted_key(event_id), members=_admitted_rows(event_id)
        )
    if store.served(event_id=event_id) is None:
        store.served_init(
            event_id=event_id,
            served=QueueEntry.objects.filter(event_id=event_id, admitted_at__isnull=False).count(),
        )
    if Event.objects.filter(pk=event_id, prequeue_shuffled_at__isnull=False).exists():
        # The scores just written are the shuffled ones.
        store.shuffle_mark(event_id=event_id)
    report.update(
        waiting=waiting_pg, admitted=admitted_pg, seconds=round(time.perf_counter() - started, 3)
    )
    if report["waiting_added"] or report["admitted_added"]:
        logger.warning("queue rebuilt event=%s %s", event_id, report)
    return report


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


def queue_reconcile_event(*, event_id: uuid.UUID | str, full: bool | None = None) -> dict:
    """Make Redis agree with Postgres for one event: re-add missing WAITING and
    ADMITTED entries, drop members that are neither any more.

    Cheap when nothing diverged: sizes are compared first and a set of the
    right size is left alone. Equal sizes can still hide a swap (one member
    lost, one stale), so every ``QUEUE_FULL_RECONCILE_SECONDS`` (default 300)
    a full pass re-sends every member and scans for stale ones. Runs under
    the admission lock so it never interleaves with a tick of the same event."""
    store = queue_store()
    owner = store.lock_acquire(event_id=event_id, ttl_ms=120_000)
    if owner is None:
        return {"skipped": "locked"}
    try:
        if full is None:
            every = int(getattr(settings, "QUEUE_FULL_RECONCILE_SECONDS", 300))
            full = store.full_check_due(event_id=event_id, every_seconds=every)
        report = {"waiting_added": 0, "admitted_added": 0, "dropped": 0}
        checks = (
            (store.waiting_key(event_id), QueueStatus.WAITING, _waiting_rows, "waiting_added"),
            (store.admitted_key(event_id), QueueStatus.ADMITTED, _admitted_rows, "admitted_added"),
        )
        for key, status, rows, label in checks:
            in_pg = _count(event_id, status)
            if not full and store.r.zcard(key) == in_pg:
                continue
            if in_pg:
                report[label] = store.add_many(key=key, members=rows(event_id))
            if store.r.zcard(key) > in_pg:
                report["dropped"] += _drop_stale(event_id, key, status)
        if report["waiting_added"] or report["admitted_added"] or report["dropped"]:
            logger.warning("queue reconciled event=%s %s", event_id, report)
        return report
    finally:
        store.lock_release(event_id=event_id, token=owner)


def queue_reconcile_all() -> dict[str, dict]:
    """Every live event; and entries left live on ended events (a join that
    raced ``event_end``) are closed."""
    from queueing.services import queue_close

    reports: dict[str, dict] = {}
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
