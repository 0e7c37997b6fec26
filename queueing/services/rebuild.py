"""Redis waiting and admitted sets from Postgres (invariant 2).

``queue_rebuild`` puts back what is missing (worker start, ``rebuild_redis``,
and the admission tick that finds the line marker gone after a wipe);
``queue_reconcile_event`` (reconcile.py) also drops what Postgres no longer
has (beat). Both compare sizes first, so they cost two COUNTs and two ZCARDs
when nothing diverged, and stream the rows in pipelined batches of 10,000
when it did; then both set the line marker (the waiting set holds the whole
line: ranks from it are answers again). Both hold the event's admission lock
while they write: rows read before a tick admitted someone must not put them
back in the line after the tick moved them.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator

from django.db import connection

from events.models import Event
from fairqueue.locks import redis_lock
from fairqueue.metrics import heal
from queueing.domain import QueueStatus
from queueing.models import QueueEntry
from queueing.store import REBUILD_BATCH, queue_store

logger = logging.getLogger(__name__)

_TABLE = QueueEntry._meta.db_table


def _rows(
    event_id: uuid.UUID | str, status: QueueStatus, score_sql: str
) -> Iterator[tuple[str, int]]:
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


def waiting_rows(event_id: uuid.UUID | str) -> Iterator[tuple[str, int]]:
    return _rows(event_id, QueueStatus.WAITING, "score")


def admitted_rows(event_id: uuid.UUID | str) -> Iterator[tuple[str, int]]:
    # Score = admission expiry in ms, the same as the admission tick writes.
    return _rows(
        event_id,
        QueueStatus.ADMITTED,
        "(floor(extract(epoch from admission_expires_at) * 1000))::bigint",
    )


def count(event_id: uuid.UUID | str, status: QueueStatus) -> int:
    return QueueEntry.objects.filter(event_id=event_id, status=status).count()


# The admission lock of an event (taken by its tick and its reconciliation):
# how long a rebuild waits for it, and holds it at most.
REBUILD_LOCK_WAIT_S = 10.0
REBUILD_LOCK_TTL_S = 120.0


def queue_rebuild(*, event_id: uuid.UUID | str) -> dict[str, int | float | str]:
    """Re-add the waiting and admitted sets where Redis has fewer members
    than Postgres, with their exact scores (so the exact order), under the
    event's admission lock. Idempotent: ZADD of the same member and score
    changes nothing. Raises RedisUnavailable when Redis goes away midway."""
    store = queue_store()
    with redis_lock(
        store.lock_key(event_id), ttl_s=REBUILD_LOCK_TTL_S, wait_s=REBUILD_LOCK_WAIT_S
    ) as held:
        if held is None:
            return {"skipped": "locked"}
        return _rebuild(event_id)


def _rebuild(event_id: uuid.UUID | str) -> dict[str, int | float | str]:
    store = queue_store()
    started = time.perf_counter()
    report: dict[str, int | float | str] = {"waiting_added": 0, "admitted_added": 0}
    sizes = store.sizes(event_id=event_id)
    if sizes is None:
        return {"skipped": "redis_unavailable"}
    waiting_redis, admitted_redis = sizes
    lost = not store.line_built(event_id=event_id)
    waiting_pg = count(event_id, QueueStatus.WAITING)
    admitted_pg = count(event_id, QueueStatus.ADMITTED)
    if waiting_redis < waiting_pg:
        report["waiting_added"] = store.add_many(
            key=store.waiting_key(event_id), members=waiting_rows(event_id)
        )
    if admitted_redis < admitted_pg:
        report["admitted_added"] = store.add_many(
            key=store.admitted_key(event_id), members=admitted_rows(event_id)
        )
    if store.served(event_id=event_id) is None:
        # The tick sets the counter from Postgres' own total (never adds to
        # it), so a count made here cannot be counted twice.
        store.served_init(
            event_id=event_id,
            served=QueueEntry.objects.filter(event_id=event_id, admitted_at__isnull=False).count(),
        )
    if Event.objects.filter(pk=event_id, prequeue_shuffled_at__isnull=False).exists():
        # The scores just written are the shuffled ones.
        store.shuffle_mark(event_id=event_id)
    # Everyone who joined since the wipe added themselves; the rows written
    # here are everyone before: the set is the whole line.
    store.line_mark(event_id=event_id)
    report.update(
        waiting=waiting_pg, admitted=admitted_pg, seconds=round(time.perf_counter() - started, 3)
    )
    if report["waiting_added"] or report["admitted_added"]:
        # A Redis wipe is routine (the line marker went with it, or both sets
        # did; joiners since may have added themselves); a set short of
        # members that Redis kept is not.
        wiped = lost or (waiting_redis == 0 and admitted_redis == 0)
        missing = max(0, waiting_pg - waiting_redis) + max(0, admitted_pg - admitted_redis)
        heal("queue_rebuilt" if wiped else "queue_divergence", missing)
        level = logging.INFO if wiped else logging.WARNING
        logger.log(level, "queue rebuilt event=%s %s", event_id, report)
    return report
