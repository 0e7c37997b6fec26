"""Writes of the waiting room: joining, leaving, admission checks for the
claim step, closing. Postgres is written first, Redis second (invariant 2).

The admission tick lives in ``queueing.admission`` and the Redis rebuild in
``queueing.rebuild``; both are re-exported here, the one door for writes.
"""

from __future__ import annotations

import logging
import time
import uuid
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime

import redis
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from claims.domain import HOLDING_STATUSES
from claims.models import Claim
from claims.selectors import already_claimed
from events.domain import in_prequeue, is_on_sale
from fairqueue.errors import Conflict, Forbidden, InvalidTransition, NotFound, Unauthenticated
from queueing.admission import (  # noqa: F401  (re-exported: services are the door for writes)
    admission_tick_all,
    admission_tick_event,
    admissions_expire,
    prequeue_shuffle,
)
from queueing.domain import LIVE_STATUSES, QueueStatus, eta_seconds
from queueing.models import QueueEntry
from queueing.pushes import send_expired
from queueing.rebuild import (  # noqa: F401  (re-exported)
    queue_rebuild,
    queue_reconcile_all,
    queue_reconcile_event,
)
from queueing.selectors import (
    EventSnapshot,
    entry_latest,
    event_snapshot,
    event_snapshot_forget,
    fallback_rate,
    waiting_rank,
)
from queueing.store import queue_store
from queueing.tokens import admission_token_issue, admission_token_read

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class JoinResult:
    queue_entry_id: uuid.UUID
    status: str
    position: int | None
    eta_seconds: int | None
    served: int | None


@dataclass(frozen=True)
class PositionResult:
    status: str
    position: int | None
    eta_seconds: int | None
    served: int | None = None
    admission_token: str | None = None
    admission_expires_at: datetime | None = None


def _now_us() -> int:
    return time.time_ns() // 1000


def _event_for_queue(event_id: object) -> EventSnapshot:
    event = event_snapshot(event_id=event_id)
    if event is None:
        raise NotFound("No such event.", code="event_not_found")
    return event


def _eta(event: EventSnapshot, position: int | None, rate: float | None) -> int | None:
    if position is None:
        return None
    wait = max(0.0, (event.sale_start - timezone.now()).total_seconds())
    if rate is None:
        rate = fallback_rate(batch_size=event.admission_batch_size)
    return eta_seconds(position=position, rate_per_second=rate, wait_before_start=wait)


# One statement, one round trip: the entry is inserted only if the customer
# holds no claim for the event; the partial unique index refuses a second live
# entry. Zero rows inserted therefore means "already claimed".
_HOLDING = ", ".join(["%s"] * len(HOLDING_STATUSES))
_JOIN_SQL = f"""
INSERT INTO {QueueEntry._meta.db_table}
    (id, event_id, customer_id, status, score, prequeue, joined_at)
SELECT %s, %s, %s, %s, %s, %s, %s
WHERE NOT EXISTS (
    SELECT 1 FROM {Claim._meta.db_table}
    WHERE event_id = %s AND customer_id = %s AND status IN ({_HOLDING})
)
"""  # noqa: S608  (table names come from the models, values are parameters)


def queue_join(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> JoinResult:
    """Postgres row first, then the waiting sorted set; the position is the
    exact rank right after the ZADD.

    Hot path: one INSERT, one Redis round trip, the event from a 1 s cache."""
    event = _event_for_queue(event_id)
    now = timezone.now()
    window = {"status": event.status, "now": now, "sale_start": event.sale_start}
    prequeue = in_prequeue(**window, prequeue_opens_at=event.prequeue_opens_at)
    if not prequeue and not is_on_sale(**window, sale_end=event.sale_end):
        raise Conflict("This event is not on sale.", code="event_not_on_sale")

    entry_id, score = uuid.uuid4(), _now_us()
    params = [
        entry_id,
        event.id,
        customer_id,
        QueueStatus.WAITING.value,
        score,
        prequeue,
        now,
        event.id,
        customer_id,
        *[s.value for s in HOLDING_STATUSES],
    ]
    # Inside a caller's transaction a failed INSERT must not poison it: use a
    # savepoint there; in autocommit (the API) the statement commits itself.
    guard = transaction.atomic() if connection.in_atomic_block else nullcontext()
    try:
        with guard, connection.cursor() as cursor:
            cursor.execute(_JOIN_SQL, params)
            inserted = cursor.rowcount
    except IntegrityError as exc:
        constraint = getattr(getattr(exc.__cause__, "diag", None), "constraint_name", "") or ""
        if constraint == "queue_one_live_entry":
            raise Conflict("You are already in this queue.", code="already_in_queue") from exc
        if "customer" in constraint:  # the token names a customer that no longer exists
            raise Unauthenticated("Unknown customer.", code="invalid_token") from exc
        event_snapshot_forget(event.id)  # the event was deleted under the cache
        raise NotFound("No such event.", code="event_not_found") from exc
    if not inserted:
        raise already_claimed(event_id=event.id, customer_id=customer_id)

    try:
        answer = queue_store().join(event_id=event.id, customer_id=customer_id, score=score)
    except redis.RedisError:
        # The row is committed: the reconciliation re-adds it to Redis. The
        # position still comes, from Postgres.
        logger.warning("queue join: redis unavailable, position from postgres", exc_info=True)
        entry = QueueEntry(event_id=event.id, customer_id=customer_id, score=score)
        position = waiting_rank(entry=entry) + 1
        eta = _eta(event, position, None)
        return JoinResult(entry_id, QueueStatus.WAITING, position, eta, None)
    position = answer.rank + 1
    return JoinResult(
        entry_id, QueueStatus.WAITING, position, _eta(event, position, answer.rate), answer.served
    )


def queue_abandon(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> None:
    """WAITING -> ABANDONED (conditional), then out of the sorted set."""
    _event_for_queue(event_id)
    updated = QueueEntry.objects.filter(
        event_id=event_id, customer_id=customer_id, status=QueueStatus.WAITING
    ).update(status=QueueStatus.ABANDONED, finished_at=timezone.now())
    if not updated:
        entry = entry_latest(event_id=event_id, customer_id=customer_id)
        if entry is None or entry.status not in LIVE_STATUSES:
            raise NotFound("You are not in this queue.", code="not_in_queue")
        raise InvalidTransition(
            f"Only a waiting place can be given up (it is {entry.status}).",
            details={"from": entry.status, "to": QueueStatus.ABANDONED.value},
        )
    try:
        queue_store().leave(event_id=event_id, customer_id=customer_id)
    except redis.RedisError:
        logger.warning("queue abandon: redis unavailable; reconciliation will drop it")


def _admitted_answer(entry: QueueEntry, served: int | None) -> PositionResult:
    """An admitted customer who missed the push gets a (re-minted) token."""
    token = admission_token_issue(
        event_id=entry.event_id,
        customer_id=entry.customer_id,
        queue_entry_id=entry.id,
        expires_at=entry.admission_expires_at,
    )
    return PositionResult(
        status=QueueStatus.ADMITTED,
        position=None,
        eta_seconds=0,
        served=served,
        admission_token=token,
        admission_expires_at=entry.admission_expires_at,
    )


def queue_position(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> PositionResult:
    """Exact rank from the sorted set; Postgres answers when Redis is down or
    does not know the customer."""
    event = _event_for_queue(event_id)
    answer = None
    try:
        answer = queue_store().position(event_id=event.id, customer_id=customer_id)
    except redis.RedisError:
        logger.warning("queue position: redis unavailable, answering from postgres")
    if answer is not None and answer.rank is not None:
        position = answer.rank + 1
        return PositionResult(
            QueueStatus.WAITING, position, _eta(event, position, answer.rate), answer.served
        )
    served = answer.served if answer is not None else None
    entry = entry_latest(event_id=event.id, customer_id=customer_id)
    if entry is None:
        raise NotFound("You are not in this queue.", code="not_in_queue")
    if entry.status == QueueStatus.WAITING:
        position = waiting_rank(entry=entry) + 1
        return PositionResult(
            QueueStatus.WAITING, position, _eta(event, position, answer and answer.rate), served
        )
    if entry.status == QueueStatus.ADMITTED and entry.admission_expires_at > timezone.now():
        return _admitted_answer(entry, served)
    status = QueueStatus.EXPIRED if entry.status == QueueStatus.ADMITTED else entry.status
    return PositionResult(status=status, position=None, eta_seconds=None, served=served)


# --- the claim step's side of admission -------------------------------------


def admission_verify(
    *, token: str, event_id: uuid.UUID | str, customer_id: uuid.UUID | str
) -> QueueEntry:
    """The admission token is genuine, for this event and customer, and its
    entry is still ADMITTED inside its window.

    Errors: 401 invalid_token (bad signature or format), 403 admission_invalid
    (another customer or event), 403 admission_expired (expired, revoked, not
    admitted). Redis' admitted set answers first; an entry it does not know
    (wiped Redis, or the token is from an older admission) is read from
    Postgres. The final word is ``queue_entry_complete`` inside the claim
    transaction, which only moves a still-valid ADMITTED entry."""
    admission = admission_token_read(token=token, event_id=event_id, customer_id=customer_id)
    now = timezone.now()
    try:
        until_ms = queue_store().admitted_until_ms(
            event_id=admission.event_id, customer_id=admission.customer_id
        )
    except redis.RedisError:
        until_ms = None
    # The token expires with the admission, so an admitted-set score equal to
    # the token's expiry (to the second) is this very admission.
    if until_ms is not None and abs(until_ms // 1000 - admission.expires_at.timestamp()) <= 1:
        if until_ms <= now.timestamp() * 1000:
            raise Forbidden("The admission has expired.", code="admission_expired")
        # Built from the token and Redis, no database read: id, event_id,
        # customer_id, status and admission_expires_at are set, nothing else.
        entry = QueueEntry(
            id=admission.queue_entry_id,
            event_id=admission.event_id,
            customer_id=admission.customer_id,
            status=QueueStatus.ADMITTED,
            admission_expires_at=datetime.fromtimestamp(until_ms / 1000, UTC),
        )
        entry._state.adding, entry._state.db = False, "default"
        return entry
    entry = QueueEntry.objects.filter(
        pk=admission.queue_entry_id,
        event_id=admission.event_id,
        customer_id=admission.customer_id,
    ).first()
    if (
        entry is None
        or entry.status != QueueStatus.ADMITTED
        or entry.admission_expires_at is None
        or entry.admission_expires_at <= now
    ):
        raise Forbidden("The admission has expired.", code="admission_expired")
    return entry


def queue_entry_complete(*, entry_id: uuid.UUID | str) -> bool:
    """ADMITTED -> COMPLETED, only while the admission window is open. Call it
    inside the claim transaction: False means the admission is no longer valid
    and the claim must not be made."""
    now = timezone.now()
    updated = QueueEntry.objects.filter(
        pk=entry_id, status=QueueStatus.ADMITTED, admission_expires_at__gt=now
    ).update(status=QueueStatus.COMPLETED, finished_at=now)
    return updated == 1


def admission_slot_release(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> None:
    """After the claim committed: the customer leaves the admitted set (best
    effort; the reconciliation drops members that are no longer ADMITTED)."""
    try:
        queue_store().release_admitted(event_id=event_id, customer_ids=[customer_id])
    except redis.RedisError:
        logger.warning("admission slot release: redis unavailable; reconciliation will heal")


# --- end of sale --------------------------------------------------------------


def queue_close(*, event_id: uuid.UUID | str) -> int:
    """Everyone still WAITING or ADMITTED becomes EXPIRED (the sale ended).
    Postgres first, then the Redis sets go. Returns how many entries closed."""
    now = timezone.now()
    with transaction.atomic():
        admitted = list(
            QueueEntry.objects.filter(event_id=event_id, status=QueueStatus.ADMITTED).values_list(
                "customer_id", flat=True
            )
        )
        closed = QueueEntry.objects.filter(event_id=event_id, status__in=LIVE_STATUSES).update(
            status=QueueStatus.EXPIRED, finished_at=now
        )
    try:
        queue_store().drop_event(event_id=event_id)
    except redis.RedisError:
        logger.warning("queue close: redis unavailable; reconciliation will drop the sets")
    send_expired(event_id=event_id, customer_ids=admitted, reason="sale_ended")
    logger.info("queue closed event=%s expired=%s", event_id, closed)
    return closed
