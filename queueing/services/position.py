"""Where a customer stands in the waiting line. Redis answers (one round
trip); Postgres answers whenever Redis cannot (unreachable, wiped and not
rebuilt yet, or a customer it shows as admitted, whose token only Postgres
can mint), and once the event is no longer live."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from customers.revocation import auth_state_store, customer_token_settle
from customers.throttling import read_bucket_in_script
from customers.tokens import CustomerPrincipal
from events.domain import LIVE_STATUSES as EVENT_LIVE_STATUSES
from events.domain import resale_after_sale
from fairqueue.errors import ErrorCode, NotFound
from queueing.domain import LIVE_STATUSES, EndReason, QueueStatus
from queueing.models import QueueEntry
from queueing.selectors import (
    EventSnapshot,
    admission_window_open,
    entry_latest,
    event_snapshot,
    waiting_rank,
)
from queueing.services.answers import postgres_epoch, served_or_counted, waiting_eta
from queueing.services.clock import admission_clock_stop
from queueing.store import PositionAnswer, queue_store
from queueing.tokens import admission_token_issue


@dataclass(frozen=True)
class PositionResult:
    status: str
    position: int | None
    eta_seconds: int | None
    served: int | None = None
    poll_after_seconds: int | None = None
    admission_token: str | None = None
    admission_expires_at: datetime | None = None
    admission_extendable: bool = False  # ADMITTED: the one extension is still there
    reason: str | None = None  # EXPIRED: why (EndReason)
    score: int | None = None  # WAITING: as JoinResult
    epoch: int | None = None


def _event_for_queue(event_id: uuid.UUID | str) -> EventSnapshot:
    event = event_snapshot(event_id=event_id)
    if event is None:
        raise NotFound("No such event.", code=ErrorCode.EVENT_NOT_FOUND)
    return event


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
        admission_extendable=entry.extended_at is None,
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
        eta, poll_after = waiting_eta(event, position, answer.rate)
        return PositionResult(
            QueueStatus.WAITING,
            position,
            eta,
            served_or_counted(event, answer.served),
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
        eta, poll_after = waiting_eta(event, position, answer.rate if answer else None)
        return PositionResult(
            QueueStatus.WAITING,
            position,
            eta,
            served_or_counted(event, served),
            poll_after,
            score=entry.score,
            epoch=postgres_epoch(event),
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
