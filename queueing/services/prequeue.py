"""The pre-queue shuffle: customers who joined between ``prequeue_opens_at``
and ``sale_start`` get a random order at sale start, ahead of later joiners.
Postgres first (with the event's ``prequeue_shuffled_at`` mark), Redis after,
marked, so a crash in between is repaired by the next tick."""

from __future__ import annotations

import logging
import random
import uuid
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from events.models import Event
from fairqueue.faults import fault_point
from fairqueue.redis import RedisUnavailable
from queueing.domain import QueueStatus
from queueing.models import QueueEntry
from queueing.services.draw import draw_publish
from queueing.store import queue_store

logger = logging.getLogger(__name__)

_TABLE = QueueEntry._meta.db_table

# A drawn order, written in one statement: entry i gets score i.
_SHUFFLE_SQL = """
UPDATE {table} AS q SET score = s.rank
FROM unnest(%s::uuid[], %s::bigint[]) AS s(id, rank)
WHERE q.id = s.id AND q.status = %s
"""


def ranks_draw(*, table: str, ids: list[uuid.UUID], status: str) -> None:
    """The draw, for the pre-queue and the waiting list's first minute: the
    rows ``ids`` of ``table`` (those still in ``status``) get a random
    permutation of 1..N as their score, in one statement. Run it in the
    transaction that marks the draw as made."""
    random.SystemRandom().shuffle(ids)
    if ids:
        with connection.cursor() as cursor:
            cursor.execute(
                _SHUFFLE_SQL.format(table=table), [ids, list(range(1, len(ids) + 1)), status]
            )


def prequeue_shuffle(*, event_id: uuid.UUID | str, now: datetime | None = None) -> int:
    """Once, at the first tick at or after sale start: the pre-queue's WAITING
    entries get a random permutation of 1..N as their score (ahead of every
    later joiner, whose score is a time in microseconds). Postgres first, in
    the same transaction as the ``prequeue_shuffled_at`` mark; Redis after,
    marked so a crash in between is repaired by the next tick."""
    now = now or timezone.now()
    with transaction.atomic():
        marked = Event.objects.filter(
            pk=event_id,
            prequeue_opens_at__isnull=False,
            prequeue_shuffled_at__isnull=True,
            sale_start__lte=now,
        ).update(prequeue_shuffled_at=now)
        if not marked:
            return 0
        ids = list(
            QueueEntry.objects.filter(
                event_id=event_id, status=QueueStatus.WAITING, prequeue=True
            ).values_list("id", flat=True)
        )
        ranks_draw(table=_TABLE, ids=ids, status=QueueStatus.WAITING.value)
    fault_point("queue.prequeue.after_commit")
    prequeue_to_redis(event_id=event_id)
    logger.info("pre-queue shuffled event=%s entries=%s", event_id, len(ids))
    return len(ids)


def prequeue_to_redis(*, event_id: uuid.UUID | str) -> int | None:
    """Copy the shuffled pre-queue scores from Postgres to the waiting set
    (only members already there: a missing set is the rebuild's job), write
    the draw's public documents (``queueing.services.draw``), then mark the
    shuffle as in Redis. None when Redis is unreachable: the next tick sees
    no mark and tries again."""
    store = queue_store()
    rows = QueueEntry.objects.filter(
        event_id=event_id, status=QueueStatus.WAITING, prequeue=True
    ).values_list("customer_id", "score")
    try:
        sent = store.add_many(
            key=store.waiting_key(event_id),
            members=((str(c), s) for c, s in rows.iterator(chunk_size=10_000)),
            only_existing=True,
        )
        draw_publish(event_id=event_id)
        store.shuffle_mark(event_id=event_id)
    except RedisUnavailable:
        return None
    return sent
