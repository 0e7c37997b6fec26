"""Joining and leaving the waiting line. Postgres is written first, Redis
second (invariant 2); the place a join answers is the exact rank right after
its add (Postgres' count when Redis cannot say). Where a customer stands
later: position.py."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from customers.revocation import (
    auth_state_store,
    customer_signed_in,
    customer_token_settle,
    signed_in_params,
    signed_in_sql,
    signed_in_state_sql,
)
from customers.tokens import CustomerPrincipal
from events.domain import LIVE_STATUSES as EVENT_LIVE_STATUSES
from events.domain import in_prequeue, is_on_sale
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
from queueing.domain import LIVE_STATUSES, QueueStatus
from queueing.models import QueueEntry
from queueing.selectors import (
    EventSnapshot,
    entry_latest,
    event_snapshot,
    event_snapshot_forget,
    waiting_rank,
)
from queueing.services.answers import postgres_epoch, served_or_counted, waiting_eta
from queueing.services.clock import admission_clock_stop
from queueing.store import queue_store

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


def _now_us() -> int:
    return time.time_ns() // 1000


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


def _join_sql(signed_in: bool) -> str:
    # Named parameters throughout, so the bar's SQL can use them too. Zero
    # rows inserted means "the sale is over", "barred" or (``signed_in``)
    # "signed out"; the partial unique index refuses a second live entry.
    # A token checked here returns its customer's sign-out state, for the
    # cache that the customer's next requests read.
    bar = f" AND NOT ({_bar.sql})" if _bar is not None else ""
    token = f" AND {signed_in_sql()}" if signed_in else ""
    returning = f" RETURNING {signed_in_state_sql()}" if signed_in else ""
    return f"""
INSERT INTO {QueueEntry._meta.db_table}
    (id, event_id, customer_id, status, score, prequeue, joined_at)
SELECT %(id)s, %(event_id)s, %(customer_id)s, %(status)s, %(score)s, %(prequeue)s, %(now)s
WHERE {_EVENT_LIVE_SQL}{bar}{token}{returning}
"""


def queue_join(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> JoinResult:
    """Postgres row first, then the waiting sorted set; the position is the
    exact rank right after the ZADD.

    Hot path: one INSERT, one Redis round trip, the event from a 1 s cache."""
    return _join(event_id, customer_id, None)


def queue_join_signed_in(*, event_id: uuid.UUID | str, principal: CustomerPrincipal) -> JoinResult:
    """``queue_join`` for a customer whose token is verified but not yet
    checked for sign-out: the INSERT checks it against Postgres (the truth)
    in the same statement, so a join reads no sign-out state from Redis. A
    signed-out token gets 401 ``token_revoked`` before any other refusal,
    as every request does."""
    return _join(event_id, principal.id, principal)


def _join(
    event_id: uuid.UUID | str,
    customer_id: uuid.UUID | str,
    signed_in: CustomerPrincipal | None,
) -> JoinResult:
    event = event_snapshot(event_id=event_id)
    if event is None:
        raise _signed_out_first(
            NotFound("No such event.", code=ErrorCode.EVENT_NOT_FOUND), signed_in
        )
    now = timezone.now()
    window: dict[str, Any] = {"status": event.status, "now": now, "sale_start": event.sale_start}
    prequeue = in_prequeue(**window, prequeue_opens_at=event.prequeue_opens_at)
    if not prequeue and not is_on_sale(**window, sale_end=event.sale_end):
        raise _signed_out_first(
            Conflict("This event is not on sale.", code=ErrorCode.EVENT_NOT_ON_SALE), signed_in
        )

    entry_id, score = uuid.uuid4(), _now_us()
    params: dict[str, Any] = {
        "id": entry_id,
        "event_id": event.id,
        "customer_id": customer_id,
        "status": QueueStatus.WAITING.value,
        "score": score,
        "prequeue": prequeue,
        "now": now,
    }
    if signed_in is not None:
        params.update(signed_in_params(signed_in))
    # Inside a caller's transaction a failed INSERT must not poison it: use a
    # savepoint there; in autocommit (the API) the statement commits itself.
    guard = transaction.atomic() if connection.in_atomic_block else nullcontext()
    try:
        with guard, prepared_cursor() as cursor:
            cursor.execute(_join_sql(signed_in is not None), params)
            inserted = cursor.rowcount
            state = cursor.fetchone() if signed_in is not None and inserted else None
    except IntegrityError as exc:  # the WHERE held: the token is not signed out
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
        raise _refused(event.id, customer_id, signed_in)
    fault_point("queue.join.after_insert")
    cache = None
    if state is not None:
        auth = auth_state_store()
        cache = (auth.key(customer_id), auth.fill_args(state[0], list(state[1])))
    return _added(event, entry_id, customer_id, score, prequeue, cache)


def _added(
    event: EventSnapshot,
    entry_id: uuid.UUID,
    customer_id: uuid.UUID | str,
    score: int,
    prequeue: bool,
    cache: tuple[str, list[Any]] | None,
) -> JoinResult:
    """The committed entry into the waiting set (and the sign-out state into
    its cache), and the place it has there."""
    store = queue_store()
    answer = store.join(event_id=event.id, customer_id=customer_id, score=score, cache=cache)
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
        eta, poll_after = waiting_eta(event, position, rate)
        served = served_or_counted(event, served)
        return JoinResult(
            entry_id,
            QueueStatus.WAITING,
            position,
            eta,
            served,
            poll_after,
            score,
            postgres_epoch(event),
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
    eta, poll_after = waiting_eta(event, position, answer.rate)
    served = served_or_counted(event, answer.served)
    return JoinResult(
        entry_id, QueueStatus.WAITING, position, eta, served, poll_after, score, epoch
    )


def _signed_out_first(error: AppError, signed_in: CustomerPrincipal | None) -> AppError:
    """``error``, once the token was checked for sign-out (401 first)."""
    if signed_in is not None:
        customer_signed_in(signed_in)
    return error


def _refused(
    event_id: uuid.UUID, customer_id: uuid.UUID | str, signed_in: CustomerPrincipal | None
) -> AppError:
    """Why the INSERT inserted nothing: the token was signed out (Postgres
    says, as it did in the INSERT), the event is no longer on sale (the
    cached event was older than its end), or the join bar."""
    if signed_in is not None:
        customer_token_settle(signed_in, None)
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
    if event_snapshot(event_id=event_id) is None:
        raise NotFound("No such event.", code=ErrorCode.EVENT_NOT_FOUND)
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
