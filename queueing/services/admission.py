"""The admission tick of one event: shuffle the pre-queue at sale start,
expire lapsed admissions, admit the next batch, tell everyone.

Order of writes, and why a crash anywhere heals
-----------------------------------------------
Postgres decides and commits first; Redis follows.

* Who is admitted is chosen in Postgres: the event row is locked
  (``FOR NO KEY UPDATE``: it serialises concurrent ticks but does not block
  joins, whose foreign key only takes ``FOR KEY SHARE``), capacity is counted
  from Postgres (free tickets, live admissions), the next ``n`` WAITING rows by
  (score, customer id) are moved to ADMITTED in one conditional UPDATE, and the
  transaction commits. Only then does one Lua script move exactly those
  customers from the waiting set to the admitted set in Redis.
* A crash after the commit and before the Lua move leaves customers ADMITTED
  in Postgres and still in Redis' waiting set. Nothing is over-admitted,
  because capacity is always counted in Postgres; the admission is valid for
  the claim step (``admission_verify`` falls back to Postgres); the position
  endpoint hands out the token once the reconciliation (``queue_reconcile``,
  every 30 s) has moved them, and a Redis wipe is rebuilt from Postgres.
* The other order (pop in Redis first) would let a crash, or a Redis wipe,
  leave people admitted in Redis whom Postgres never recorded, and a second
  worker counting capacity from Redis could admit past the tickets left.
* Two ticks at once: the event's Redis lock (released only by its owner)
  makes that rare, the event row lock makes it harmless. The second tick
  waits for the first to commit and then counts its admissions.
* Re-running a tick is idempotent: the UPDATE only moves WAITING rows, the Lua
  move of a customer already moved changes nothing.

Expiry follows the same rule: ADMITTED -> EXPIRED in Postgres, then ZREM.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

import redis
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from events.domain import EventStatus
from events.models import Event
from fairqueue.broadcast import customer_group, event_group
from fairqueue.faults import fault_point
from fairqueue.locks import redis_lock
from fairqueue.metrics import ADMISSION_TICK_DURATION, timed
from inventory.selectors import event_free_tickets
from queueing.domain import QueueStatus, admission_capacity
from queueing.models import QueueEntry
from queueing.pushes import send_expired, send_many
from queueing.store import queue_store
from queueing.tokens import admission_tokens_issue

logger = logging.getLogger(__name__)
T = TypeVar("T")

RATE_WINDOW_SECONDS = 60.0
_TABLE = QueueEntry._meta.db_table

# The next n WAITING entries, in queue order, moved to ADMITTED in one
# statement. SKIP LOCKED: a row another transaction is touching (the customer
# abandoning right now) is passed over rather than waited for. ``= ANY(ARRAY(
# ...))`` makes Postgres fetch the n rows by primary key instead of scanning
# the whole queue to join against them.
_ADMIT_SQL = f"""
UPDATE {_TABLE} SET status = %s, admitted_at = %s, admission_expires_at = %s
WHERE id = ANY(ARRAY(
    SELECT id FROM {_TABLE}
    WHERE event_id = %s AND status = %s
    ORDER BY score, customer_id
    LIMIT %s
    FOR UPDATE SKIP LOCKED
)) AND status = %s
RETURNING id, customer_id
"""  # noqa: S608

_EXPIRE_SQL = f"""
UPDATE {_TABLE} SET status = %s, finished_at = %s
WHERE event_id = %s AND status = %s AND admission_expires_at <= %s
RETURNING id, customer_id
"""  # noqa: S608

# The shuffled pre-queue order, written in one statement: entry i gets score i.
_SHUFFLE_SQL = f"""
UPDATE {_TABLE} AS q SET score = s.rank
FROM unnest(%s::uuid[], %s::bigint[]) AS s(id, rank)
WHERE q.id = s.id AND q.status = %s
"""  # noqa: S608


@dataclass
class TickReport:
    event_id: str
    skipped: str = ""
    shuffled: int = 0
    expired: int = 0
    admitted: int = 0
    capacity: int = 0
    served: int | None = None
    rate: float | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)


def _redis_quietly(what: str, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T | None:
    """A Redis step that may fail without stopping admission: Postgres has
    the truth, the rebuild and the reconciliation bring Redis back."""
    try:
        return fn(*args, **kwargs)
    except redis.RedisError:
        logger.warning("%s: redis unavailable; reconciliation will heal", what)
        return None


def _lock_wait_seconds() -> float:
    """How long a tick waits for the lock before it gives up its turn: up to
    half a tick, so a full queue reconciliation holding the lock (2.3 s at
    1,000,000 waiting) delays a tick instead of costing it."""
    return min(3.0, float(settings.ADMISSION_INTERVAL_SECONDS) / 2)


def _lock_ttl_s() -> float:
    """Short: a tick takes well under a second, and the event row lock makes
    an overlap harmless, so the lock only needs to outlive one tick. Its TTL
    is how long a worker killed mid-tick stops admission of that event."""
    return max(5.0, float(settings.ADMISSION_INTERVAL_SECONDS) * 2)


def _ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000)


# --- pre-queue shuffle ---------------------------------------------------------


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
        random.SystemRandom().shuffle(ids)
        if ids:
            with connection.cursor() as cursor:
                cursor.execute(
                    _SHUFFLE_SQL,
                    [ids, list(range(1, len(ids) + 1)), QueueStatus.WAITING.value],
                )
    fault_point("queue.prequeue.after_commit")
    _redis_quietly("pre-queue shuffle", prequeue_to_redis, event_id=event_id)
    logger.info("pre-queue shuffled event=%s entries=%s", event_id, len(ids))
    return len(ids)


def prequeue_to_redis(*, event_id: uuid.UUID | str) -> int:
    """Copy the shuffled pre-queue scores from Postgres to the waiting set
    (only members already there: a missing set is the rebuild's job)."""
    store = queue_store()
    rows = QueueEntry.objects.filter(
        event_id=event_id, status=QueueStatus.WAITING, prequeue=True
    ).values_list("customer_id", "score")
    sent = store.add_many(
        key=store.waiting_key(event_id),
        members=((str(c), s) for c, s in rows.iterator(chunk_size=10_000)),
        only_existing=True,
    )
    store.shuffle_mark(event_id=event_id)
    return sent


# --- expiry and admission -----------------------------------------------------


def admissions_expire(*, event_id: uuid.UUID | str, now: datetime | None = None) -> int:
    """ADMITTED past the window -> EXPIRED (Postgres), out of the admitted
    set (Redis), and each customer told. Their slots count as free again."""
    now = now or timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            _EXPIRE_SQL,
            [
                QueueStatus.EXPIRED.value,
                now,
                event_id,
                QueueStatus.ADMITTED.value,
                now,
            ],
        )
        rows = cursor.fetchall()
    if not rows:
        return 0
    customers = [str(customer_id) for _, customer_id in rows]
    try:
        queue_store().release_admitted(event_id=event_id, customer_ids=customers)
    except redis.RedisError:
        logger.warning("admission expiry: redis unavailable; reconciliation will heal")
    send_expired(event_id=event_id, customer_ids=customers, reason="admission_window")
    logger.info("admissions expired event=%s count=%s", event_id, len(rows))
    return len(rows)


def _event_locked_for_admission(event_id: uuid.UUID | str) -> Event | None:
    """The guard against two ticks admitting at once: the event row, locked
    until the admitting transaction commits (``FOR NO KEY UPDATE`` so joins,
    whose foreign key takes ``FOR KEY SHARE``, are not blocked)."""
    return Event.objects.select_for_update(no_key=True).filter(pk=event_id).first()


def _admit_in_postgres(
    *, event_id: uuid.UUID | str, now: datetime
) -> tuple[Event | None, int, list[tuple[uuid.UUID, uuid.UUID]], datetime]:
    """One short transaction: lock the event row, count, admit. Returns
    (event, capacity, [(entry id, customer id)], expiry)."""
    with transaction.atomic():
        event = _event_locked_for_admission(event_id)
        if event is None or event.status != EventStatus.ACTIVE:
            return event, 0, [], now
        if not (event.sale_start <= now < event.sale_end):
            return event, 0, [], now
        admitted_now = QueueEntry.objects.filter(
            event_id=event_id, status=QueueStatus.ADMITTED, admission_expires_at__gt=now
        ).count()
        free = event_free_tickets(event_id=event_id)
        capacity = admission_capacity(
            batch_size=event.admission_batch_size,
            max_active_admitted=event.max_active_admitted,
            admitted_now=admitted_now,
            free_tickets=free,
        )
        if capacity == 0:
            return event, 0, [], now
        # Whole seconds: the admission token's expiry (JWT ``exp``) is then
        # exactly the admitted-set score, which admission_verify compares.
        expires_at = (now + timedelta(seconds=event.admission_window_seconds)).replace(
            microsecond=0
        )
        with connection.cursor() as cursor:
            cursor.execute(
                _ADMIT_SQL,
                [
                    QueueStatus.ADMITTED.value,
                    now,
                    expires_at,
                    event_id,
                    QueueStatus.WAITING.value,
                    capacity,
                    QueueStatus.WAITING.value,
                ],
            )
            rows = cursor.fetchall()
    return event, capacity, rows, expires_at


def _served_total(event_id: uuid.UUID | str) -> int:
    return QueueEntry.objects.filter(event_id=event_id, admitted_at__isnull=False).count()


@timed(ADMISSION_TICK_DURATION, label_from="event_id")
def admission_tick_event(*, event_id: uuid.UUID | str, use_lock: bool = True) -> TickReport:
    """One tick for one event, single-flight (the event's Redis lock; a held
    lock is waited for up to half a tick, then the tick is skipped). Safe to
    re-run.

    With Redis down the tick still runs, without the lock: the event row lock
    in Postgres is what keeps concurrent ticks within capacity, and admitted
    customers get their token from the position endpoint (Postgres) until
    Redis is back. ``use_lock=False`` is for tests and the benchmark."""
    report = TickReport(event_id=str(event_id))
    if not use_lock:
        _tick(event_id, report)
        return report
    key = queue_store().lock_key(event_id)
    with redis_lock(key, ttl_s=_lock_ttl_s(), wait_s=_lock_wait_seconds()) as held:
        if held is None:
            report.skipped = "locked"
            return report
        _tick(event_id, report)
    return report


def _tick(event_id: uuid.UUID | str, report: TickReport) -> None:
    store = queue_store()
    started = time.perf_counter()
    now = timezone.now()
    event = Event.objects.filter(pk=event_id).first()
    if event is None or event.status not in (
        EventStatus.ACTIVE,
        EventStatus.PAUSED,
        EventStatus.SOLD_OUT,
    ):
        report.skipped = "not_live"
        return

    if event.prequeue_opens_at is not None and event.sale_start <= now:
        if event.prequeue_shuffled_at is None:
            report.shuffled = prequeue_shuffle(event_id=event_id, now=now)
        elif (
            _redis_quietly("shuffle check", store.shuffle_reached_redis, event_id=event_id) is False
        ):
            # a crash came between the Postgres shuffle and Redis
            _redis_quietly("pre-queue shuffle", prequeue_to_redis, event_id=event_id)

    report.expired = admissions_expire(event_id=event_id, now=now)
    t_expire = time.perf_counter()

    event, capacity, rows, expires_at = _admit_in_postgres(event_id=event_id, now=now)
    report.capacity = capacity
    t_pg = time.perf_counter()
    fault_point("queue.admit.after_commit")
    if event is None or event.status != EventStatus.ACTIVE:
        report.skipped = "not_active"
        return

    customers = [str(customer_id) for _, customer_id in rows]
    try:
        served, rate = store.admit(
            event_id=event_id,
            customer_ids=customers,
            expires_ms=_ms(expires_at),
            now_ms=_ms(now),
            duration_ms=int((t_pg - started) * 1000),
            interval_ms=int(settings.ADMISSION_INTERVAL_SECONDS * 1000),
            window_ms=int(max(RATE_WINDOW_SECONDS, settings.ADMISSION_INTERVAL_SECONDS * 3) * 1000),
        )
        if served is None:
            served = _served_total(event_id)
            store.served_init(event_id=event_id, served=served)
    except redis.RedisError:
        # Postgres has committed the admissions; the rebuild/reconciliation
        # moves them in Redis, and the position endpoint hands out the tokens.
        logger.warning("admission: redis unavailable after commit event=%s", event_id)
        report.admitted, report.skipped = len(rows), "redis_unavailable"
        return
    t_redis = time.perf_counter()

    expires_iso = expires_at.isoformat()
    tokens = admission_tokens_issue(event_id=event.pk, expires_at=expires_at, entries=rows)
    messages: list[tuple[str, dict[str, Any]]] = [
        (
            customer_group(event_id, customer_id),
            {
                "type": "admitted",
                "event_id": str(event_id),
                "admission_token": token,
                "admission_expires_at": expires_iso,
            },
        )
        for (_, customer_id), token in zip(rows, tokens, strict=True)
    ]
    t_tokens = time.perf_counter()
    # One message for everyone still waiting: each client subtracts the
    # served counter from its own number (no per-customer cost per tick).
    messages.append(
        (
            event_group(event_id),
            {
                "type": "position",
                "event_id": str(event_id),
                "served": served,
                "admitted": len(rows),
                "rate_per_second": round(rate, 3),
            },
        )
    )
    send_many(messages)
    t_push = time.perf_counter()

    report.admitted, report.served, report.rate = len(rows), served, rate
    report.timings_ms = {
        "expire": round((t_expire - started) * 1000, 2),
        "postgres": round((t_pg - t_expire) * 1000, 2),
        "redis": round((t_redis - t_pg) * 1000, 2),
        "tokens": round((t_tokens - t_redis) * 1000, 2),
        "push": round((t_push - t_tokens) * 1000, 2),
        "total": round((t_push - started) * 1000, 2),
    }
    if rows:
        logger.info(
            "admitted event=%s count=%s capacity=%s served=%s timings=%s",
            event_id,
            len(rows),
            capacity,
            served,
            report.timings_ms,
        )


def admission_tick_all() -> list[TickReport]:
    """Every live event, one after the other; one event failing does not stop
    the others."""
    reports = []
    live = Event.objects.filter(
        status__in=[EventStatus.ACTIVE, EventStatus.PAUSED, EventStatus.SOLD_OUT]
    ).values_list("id", flat=True)
    for event_id in live:
        try:
            reports.append(admission_tick_event(event_id=event_id))
        except Exception:
            logger.exception("admission tick failed event=%s", event_id)
    return reports
