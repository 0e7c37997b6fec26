"""Joining and leaving the waiting line, and where a customer stands in it.
Postgres is written first, Redis second (invariant 2). Redis answers the hot
questions; Postgres answers whenever Redis cannot (unreachable, wiped and
not rebuilt yet, or a customer it shows as admitted, whose token only
Postgres can mint), and once the event is no longer live."""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from customers.revocation import auth_state_store, customer_token_settle
from customers.throttling import read_bucket_in_script
from customers.tokens import CustomerPrincipal
from events.domain import LIVE_STATUSES as EVENT_LIVE_STATUSES
from events.domain import in_prequeue, is_on_sale, resale_after_sale
from events.models import Event
from fairqueue.db import prepared_cursor, violated_constraint
from fairqueue.errors import (
    AppError,
    Conflict,
    ErrorCode,
    InvalidTransition,
    NotFound,
    Unauthenticated,
)
from fairqueue.faults import fault_point
from queueing.domain import (
    LIVE_STATUSES,
    EndReason,
    QueueStatus,
    eta_seconds,
    line_epoch,
    poll_after_seconds,
)
from queueing.models import QueueEntry
from queueing.selectors import (
    EventSnapshot,
    admission_window_open,
    entry_latest,
    event_snapshot,
    event_snapshot_forget,
    fallback_rate,
    waiting_rank,
)
from queueing.services.clock import admission_clock_stop, admission_served
from queueing.store import PositionAnswer, queue_store
from queueing.tokens import admission_token_issue

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class JoinResult:
    queue_entry_id: uuid.UUID
    status: str
    position: int | None
    eta_seconds: int | None
    served: int | None
    poll_after_seconds: int | None = None
    # The customer's number for the public line state (queueing.domain):
    # its score, and the epoch of the scores it belongs to.
    score: int | None = None
    epoch: int | None = None


@dataclass(frozen=True)
class PositionResult:
    status: str
    position: int | None
    eta_seconds: int | None
    served: int | None = None
    poll_after_seconds: int | None = None
    admission_token: str | None = None
    admission_expires_at: datetime | None = None
    reason: str | None = None  # EXPIRED: why (EndReason)
    score: int | None = None  # WAITING: as JoinResult
    epoch: int | None = None


def _now_us() -> int:
    return time.time_ns() // 1000


def _event_for_queue(event_id: uuid.UUID | str) -> EventSnapshot:
    event = event_snapshot(event_id=event_id)
    if event is None:
        raise NotFound("No such event.", code=ErrorCode.EVENT_NOT_FOUND)
    return event


def _waiting(event: EventSnapshot, position: int, rate: float | None) -> tuple[int | None, int]:
    """A waiting customer's ETA and when to ask again without the socket."""
    wait = max(0.0, (event.sale_start - timezone.now()).total_seconds())
    if rate is None:
        rate = fallback_rate(batch_size=event.admission_batch_size)
    eta = eta_seconds(position=position, rate_per_second=rate, wait_before_start=wait)
    poll_after = poll_after_seconds(
        position=position,
        rate_per_second=rate,
        interval=settings.ADMISSION_INTERVAL_SECONDS,
        until_start=wait,
        spread=random.random(),
    )
    return eta, poll_after


@dataclass(frozen=True)
class JoinBar:
    """Who may not join an event's line, decided inside the join's INSERT.

    The claims app (above queueing) owns the rule "a customer who already
    holds tickets for the event does not queue again" and registers it at
    start-up (claims/apps.py), so the join stays one statement and queueing
    imports nothing from claims.

    ``sql``: a boolean SQL expression, true when the customer is barred, over
    the parameters ``%(event_id)s`` and ``%(customer_id)s``. ``error``: the
    error to raise for a barred customer."""

    sql: str
    error: Callable[[uuid.UUID | str, uuid.UUID | str], AppError]


_bar: JoinBar | None = None


def join_bar_set(bar: JoinBar | None) -> None:
    global _bar
    _bar = bar


_LIVE = ", ".join(f"'{status.value}'" for status in EVENT_LIVE_STATUSES)

# The event is live and its sale not over, read in the INSERT itself (the
# join's cached event may be up to a second old). FOR KEY SHARE, the lock
# the entry's foreign key takes anyway: it does not wait for the admission
# tick or a sold-out flip (FOR NO KEY UPDATE), but ``event_end`` locks the
# row FOR UPDATE, so a join either commits before the sale ends (and its
# entry is closed with the line) or waits, reads the event again, and
# inserts nothing.
_EVENT_LIVE_SQL = f"""EXISTS (
    SELECT 1 FROM {Event._meta.db_table} e
    WHERE e.id = %(event_id)s AND e.status IN ({_LIVE}) AND e.sale_end > %(now)s
    FOR KEY SHARE)"""  # noqa: S608  (constants of the code, no input)


def _join_sql() -> str:
    # Named parameters throughout, so the bar's SQL can use them too. Zero
    # rows inserted means "the sale is over" or "barred"; the partial unique
    # index refuses a second live entry.
    bar = f" AND NOT ({_bar.sql})" if _bar is not None else ""
    return f"""
INSERT INTO {QueueEntry._meta.db_table}
    (id, event_id, customer_id, status, score, prequeue, joined_at)
SELECT %(id)s, %(event_id)s, %(customer_id)s, %(status)s, %(score)s, %(prequeue)s, %(now)s
WHERE {_EVENT_LIVE_SQL}{bar}
"""


def queue_join(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> JoinResult:
    """Postgres row first, then the waiting sorted set; the position is the
    exact rank right after the ZADD.

    Hot path: one INSERT, one Redis round trip, the event from a 1 s cache."""
    event = _event_for_queue(event_id)
    now = timezone.now()
    window: dict[str, Any] = {"status": event.status, "now": now, "sale_start": event.sale_start}
    prequeue = in_prequeue(**window, prequeue_opens_at=event.prequeue_opens_at)
    if not prequeue and not is_on_sale(**window, sale_end=event.sale_end):
        raise Conflict("This event is not on sale.", code=ErrorCode.EVENT_NOT_ON_SALE)

    entry_id, score = uuid.uuid4(), _now_us()
    params = {
        "id": entry_id,
        "event_id": event.id,
        "customer_id": customer_id,
        "status": QueueStatus.WAITING.value,
        "score": score,
        "prequeue": prequeue,
        "now": now,
    }
    # Inside a caller's transaction a failed INSERT must not poison it: use a
    # savepoint there; in autocommit (the API) the statement commits itself.
    guard = transaction.atomic() if connection.in_atomic_block else nullcontext()
    try:
        with guard, prepared_cursor() as cursor:
            cursor.execute(_join_sql(), params)
            inserted = cursor.rowcount
    except IntegrityError as exc:
        constraint = violated_constraint(exc)
        if constraint == "queue_one_live_entry":
            raise Conflict(
                "You are already in this queue.", code=ErrorCode.ALREADY_IN_QUEUE
            ) from exc
        if "customer" in constraint:  # the token names a customer that no longer exists
            raise Unauthenticated("Unknown customer.", code=ErrorCode.INVALID_TOKEN) from exc
        event_snapshot_forget(event.id)  # the event was deleted under the cache
        raise NotFound("No such event.", code=ErrorCode.EVENT_NOT_FOUND) from exc
    if not inserted:
        raise _refused(event.id, customer_id)
    fault_point("queue.join.after_insert")

    store = queue_store()
    answer = store.join(event_id=event.id, customer_id=customer_id, score=score)
    if answer is not None and answer.rank is None:
        if _admitted_meanwhile(entry_id):
            # A tick admitted the customer before this add reached Redis.
            return JoinResult(entry_id, QueueStatus.ADMITTED, None, 0, answer.served)
        # A member of the admitted set left over from an older admission
        # (its removal was lost): drop it and join the line.
        store.release_admitted(event_id=event.id, customer_ids=[customer_id])
        answer = store.join(event_id=event.id, customer_id=customer_id, score=score)
    if answer is None or answer.rank is None or not answer.line_built:
        # Redis is unreachable (or still confused): the row is committed and
        # the reconciliation re-adds it to Redis. Or Redis does not hold the
        # whole line (wiped; the next tick rebuilds it), and a rank in what
        # it holds would put this customer ahead of everyone before the
        # wipe. The position still comes, from Postgres.
        if answer is None:
            admission_clock_stop(event_id=event.id)
        entry = QueueEntry(event_id=event.id, customer_id=customer_id, score=score)
        position = waiting_rank(entry=entry) + 1
        rate, served = (answer.rate, answer.served) if answer is not None else (None, None)
        eta, poll_after = _waiting(event, position, rate)
        served = _served(event, served)
        return JoinResult(
            entry_id, QueueStatus.WAITING, position, eta, served, poll_after, score, _epoch(event)
        )
    epoch: int | None = answer.epoch
    if prequeue and timezone.now() >= event.sale_start:
        # The sale started while this pre-queue join was on its way: the
        # shuffle may have given the entry its rank after (and then written
        # Redis before) this add. Postgres has the score that counts, and
        # the page learns it again (no epoch: its number is not one).
        _prequeue_score_to_redis(entry_id=entry_id, event_id=event.id, customer_id=customer_id)
        epoch = None
    position = answer.rank + 1
    eta, poll_after = _waiting(event, position, answer.rate)
    served = _served(event, answer.served)
    return JoinResult(
        entry_id, QueueStatus.WAITING, position, eta, served, poll_after, score, epoch
    )


def _served(event: EventSnapshot, served: int | None) -> int:
    """A waiting customer's served counter: Redis', or Postgres' when Redis
    has none (before an event's first tick, after a wipe): a page counts its
    place from it."""
    return served if served is not None else admission_served(event_id=event.id)


def _epoch(event: EventSnapshot) -> int:
    """The epoch of scores read from Postgres (which holds the drawn ones
    from the draw's commit on)."""
    return line_epoch(prequeue_drawn=event.prequeue_shuffled_at is not None)


def _refused(event_id: uuid.UUID, customer_id: uuid.UUID | str) -> AppError:
    """Why the INSERT inserted nothing: the event is no longer on sale (the
    cached event was older than its end), or the join bar."""
    event_snapshot_forget(event_id)
    event = event_snapshot(event_id=event_id)
    if event is None:
        return NotFound("No such event.", code=ErrorCode.EVENT_NOT_FOUND)
    if _bar is None or event.status not in EVENT_LIVE_STATUSES or event.sale_end <= timezone.now():
        return Conflict("This event is not on sale.", code=ErrorCode.EVENT_NOT_ON_SALE)
    return _bar.error(event_id, customer_id)


def join_barred(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> AppError | None:
    """The join bar asked on its own (the waiting list's join): the error a
    barred customer gets, None when they may join."""
    if _bar is None:
        return None
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {_bar.sql}", {"event_id": event_id, "customer_id": customer_id})
        barred = cursor.fetchone()[0]
    return _bar.error(event_id, customer_id) if barred else None


def _admitted_meanwhile(entry_id: uuid.UUID) -> bool:
    status = QueueEntry.objects.filter(pk=entry_id).values_list("status", flat=True).first()
    return status == QueueStatus.ADMITTED


def _prequeue_score_to_redis(*, entry_id: uuid.UUID, event_id: object, customer_id: object) -> None:
    row = (
        QueueEntry.objects.filter(pk=entry_id, status=QueueStatus.WAITING)
        .values_list("score", flat=True)
        .first()
    )
    if row is not None:
        queue_store().rescore(event_id=event_id, customer_id=customer_id, score=row)


def queue_abandon(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> None:
    """WAITING -> ABANDONED (conditional), then out of the sorted set."""
    _event_for_queue(event_id)
    updated = QueueEntry.objects.filter(
        event_id=event_id, customer_id=customer_id, status=QueueStatus.WAITING
    ).update(status=QueueStatus.ABANDONED, finished_at=timezone.now())
    if not updated:
        entry = entry_latest(event_id=event_id, customer_id=customer_id)
        if entry is None or entry.status not in LIVE_STATUSES:
            raise NotFound("You are not in this queue.", code=ErrorCode.NOT_IN_QUEUE)
        raise InvalidTransition(
            f"Only a waiting place can be given up (it is {entry.status}).",
            details={"from": entry.status, "to": QueueStatus.ABANDONED.value},
        )
    queue_store().leave(event_id=event_id, customer_id=customer_id)


def entry_admission_token(entry: QueueEntry, expires_at: datetime) -> str:
    """The (re-minted) token of an ADMITTED entry, an offer's with its tier."""
    return admission_token_issue(
        event_id=entry.event_id,
        customer_id=entry.customer_id,
        queue_entry_id=entry.id,
        expires_at=expires_at,
        offer_tier_id=entry.offer_tier_id,
    )


def _offer_outlives_sale(event: EventSnapshot, entry: QueueEntry) -> bool:
    """A waiting-list offer stays good after the sale while returns are open."""
    return entry.offer_tier_id is not None and resale_after_sale(
        status=event.status,
        now=timezone.now(),
        sale_end=event.sale_end,
        returns_until=event.returns_until,
    )


def _admitted_answer(entry: QueueEntry, expires_at: datetime, served: int | None) -> PositionResult:
    """An admitted customer who missed the push gets a (re-minted) token."""
    token = entry_admission_token(entry, expires_at)
    return PositionResult(
        status=QueueStatus.ADMITTED,
        position=None,
        eta_seconds=0,
        served=served,
        admission_token=token,
        admission_expires_at=expires_at,
    )


def queue_position(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> PositionResult:
    """Exact rank from the sorted set; Postgres answers when Redis is down or
    does not know the customer, for a customer Redis shows as admitted (the
    token is minted from the entry), and once the sale is no longer live."""
    event = _event_for_queue(event_id)
    answer = None
    if event.status in EVENT_LIVE_STATUSES:
        answer = queue_store().position(event_id=event.id, customer_id=customer_id)
    return _position(event, customer_id, answer)


@dataclass(frozen=True)
class SignedInRead:
    position: PositionResult | None  # None: the customer's read bucket was empty
    bucket_wait_ms: int | None  # None: the bucket was not asked (the throttle asks it)


def queue_position_signed_in(
    *, event_id: uuid.UUID | str, principal: CustomerPrincipal
) -> SignedInRead:
    """``queue_position`` for a customer whose token is verified but not yet
    checked for sign-out: the sign-out state, the customer's read bucket
    (customers/throttling.py) and the place are read in one Redis round trip
    (the hottest request of a sale), then the sign-out is decided (401
    ``token_revoked`` before anything is answered). An empty bucket reads no
    place; the caller answers 429."""
    event = _event_for_queue(event_id)
    auth = auth_state_store()
    both = None
    if event.status in EVENT_LIVE_STATUSES:
        bucket = read_bucket_in_script(customer_id=principal.id)
        both = queue_store().position_with(
            event_id=event.id,
            customer_id=principal.id,
            hash_key=auth.key(principal.id),
            fields=auth.fields(principal.jti),
            bucket_key=bucket.key,
            bucket_args=bucket.args,
        )
    if both is None:  # not live, Redis unreachable, or a cluster: one read after the other
        customer_token_settle(principal, auth.read(customer_id=principal.id, jti=principal.jti))
        return SignedInRead(queue_position(event_id=event.id, customer_id=principal.id), None)
    answer, auth_reply, wait_ms = both
    customer_token_settle(principal, auth.parse(auth_reply))
    if wait_ms > 0:
        return SignedInRead(None, wait_ms)
    return SignedInRead(_position(event, principal.id, answer), 0)


def _position(
    event: EventSnapshot, customer_id: uuid.UUID | str, answer: PositionAnswer | None
) -> PositionResult:
    if answer is None and event.status in EVENT_LIVE_STATUSES:
        admission_clock_stop(event_id=event.id)
    if answer is not None and answer.rank is not None and answer.admitted_until_ms is None:
        position = answer.rank + 1
        eta, poll_after = _waiting(event, position, answer.rate)
        return PositionResult(
            QueueStatus.WAITING,
            position,
            eta,
            _served(event, answer.served),
            poll_after,
            score=answer.score,
            epoch=answer.epoch,
        )
    served = answer.served if answer is not None else None
    entry = entry_latest(event_id=event.id, customer_id=customer_id)
    if entry is None:
        raise NotFound("You are not in this queue.", code=ErrorCode.NOT_IN_QUEUE)
    if (
        event.status not in EVENT_LIVE_STATUSES
        and entry.status in LIVE_STATUSES
        and not _offer_outlives_sale(event, entry)
    ):
        # The line ended with the sale, whatever the entry still says (the
        # close that expires it may not have run yet).
        return PositionResult(
            QueueStatus.EXPIRED, None, None, served, reason=EndReason.SALE_ENDED.value
        )
    if entry.status == QueueStatus.WAITING:
        position = waiting_rank(entry=entry) + 1
        eta, poll_after = _waiting(event, position, answer.rate if answer else None)
        return PositionResult(
            QueueStatus.WAITING,
            position,
            eta,
            _served(event, served),
            poll_after,
            score=entry.score,
            epoch=_epoch(event),
        )
    expires_at = entry.admission_expires_at
    if expires_at is not None and admission_window_open(entry=entry, now=timezone.now()):
        return _admitted_answer(entry, expires_at, served)
    if entry.status == QueueStatus.ADMITTED:  # lapsed; the tick has not expired it yet
        return PositionResult(
            QueueStatus.EXPIRED, None, None, served, reason=EndReason.ADMISSION_WINDOW.value
        )
    return PositionResult(
        status=entry.status,
        position=None,
        eta_seconds=None,
        served=served,
        reason=entry.end_reason or None,
    )
