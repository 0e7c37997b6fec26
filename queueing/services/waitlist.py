"""The waiting list of a sold-out event: joining, leaving, and where a
customer stands on it. Offers (the next entries admitted when tickets free
up) are made by ``waitlist_offers``. Postgres only: the list is read where it
is written, so a Redis wipe loses nothing of it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from events.domain import EventStatus, resale_after_sale
from events.models import Event, TicketTier
from fairqueue.db import violated_constraint
from fairqueue.errors import Busy, Conflict, ErrorCode, InvalidInput, NotFound, Unauthenticated
from queueing.domain import (
    WAITLIST_DRAW_SECONDS,
    WAITLIST_LIVE_STATUSES,
    QueueStatus,
    WaitlistStatus,
)
from queueing.models import QueueEntry, WaitlistEntry, WaitlistState
from queueing.services.admission_check import admission_slot_release
from queueing.services.join import join_barred
from queueing.services.position import entry_admission_token
from queueing.store import queue_store


def returns_open_after_sale(event: Event, now: datetime) -> bool:
    """Whether the waiting list stays open once the sale is over: while
    returns are open (``Event.returns_until``), returned tickets are resold
    to it."""
    return resale_after_sale(
        status=event.status, now=now, sale_end=event.sale_end, returns_until=event.returns_until
    )


def waitlist_open(event: Event, now: datetime) -> bool:
    """Customers may join while the event is sold out, and, once it has sold
    out (its list opened), until its sale ends; after the end while returns
    keep it open (``returns_open_after_sale``)."""
    if event.status == EventStatus.ENDED or now >= event.sale_end:
        return returns_open_after_sale(event, now)
    if event.status == EventStatus.SOLD_OUT:
        return True
    return event.status in (EventStatus.ACTIVE, EventStatus.PAUSED) and (
        WaitlistState.objects.filter(event_id=event.pk).exists()
    )


def _state_ensure(event: Event, now: datetime) -> WaitlistState:
    """The list's state, made by its first join: it opened at the sell-out
    (the moment the event last changed status to SOLD_OUT, ``updated_at``)."""
    opened_at = event.updated_at if event.status == EventStatus.SOLD_OUT else now
    state, _ = WaitlistState.objects.get_or_create(
        event_id=event.pk, defaults={"opened_at": min(opened_at, now)}
    )
    return state


def draw_due_at(state: WaitlistState) -> datetime:
    return state.opened_at + timedelta(seconds=WAITLIST_DRAW_SECONDS)


# Entries put first on the list (admitted, and nothing was left) have scores
# below every other entry's (those are 0 or more: a draw rank, a join time):
# FIRST_SCORE plus the time they were put there, so among them the earlier
# come first.
FIRST_SCORE = -(2**62)


def waitlist_first(
    *, event: Event, customer_ids: list[uuid.UUID], now: datetime
) -> list[uuid.UUID]:
    """Put these customers first on the event's waiting list, in this order,
    for any tier, ahead of everyone on it (and of its first minute's draw,
    which they are not part of). A customer with a live entry already keeps
    it: moved to the front when waiting, left as it is when offered. Inside
    the caller's transaction, which ended their admissions. Returns the
    customers put first."""
    if not customer_ids:
        return []
    _state_ensure(event, now)
    base = FIRST_SCORE + _now_us(now)
    order = {customer: base + n for n, customer in enumerate(customer_ids)}
    live = dict(
        WaitlistEntry.objects.filter(
            event_id=event.pk, customer_id__in=customer_ids, status__in=WAITLIST_LIVE_STATUSES
        ).values_list("customer_id", "status")
    )
    for customer, status in live.items():
        if status == WaitlistStatus.WAITING:
            WaitlistEntry.objects.filter(
                event_id=event.pk, customer_id=customer, status=WaitlistStatus.WAITING
            ).update(score=order[customer], drawn=False)
    WaitlistEntry.objects.bulk_create(
        [
            WaitlistEntry(event_id=event.pk, customer_id=customer, score=order[customer])
            for customer in customer_ids
            if customer not in live
        ],
        ignore_conflicts=True,  # one joined meanwhile: their entry stands
    )
    return [
        c for c in customer_ids if live.get(c, WaitlistStatus.WAITING) == WaitlistStatus.WAITING
    ]


def _now_us(now: datetime) -> int:
    return int(now.timestamp() * 1_000_000)


def waitlist_join(
    *,
    event_id: uuid.UUID | str,
    customer_id: uuid.UUID | str,
    tier_id: uuid.UUID | str | None = None,
) -> WaitlistEntry:
    """One live entry per customer and event (a partial unique index, so
    concurrent joins make one). A customer who holds tickets for the event
    is refused (invariant 6); one still waiting in the event's line gives
    that place up for the list (the offer is their admission).

    Errors: 404 event_not_found; 422 tier_not_found; 409 waitlist_closed /
    already_on_waitlist / already_claimed / already_in_queue (admitted from
    the line: use that admission)."""
    event = Event.objects.filter(pk=event_id).first()
    if event is None:
        raise NotFound("No such event.", code=ErrorCode.EVENT_NOT_FOUND)
    tiers = TicketTier.objects.filter(event_id=event.pk)
    if tier_id is not None and not tiers.filter(pk=tier_id).exists():
        raise InvalidInput("No such tier for this event.", code=ErrorCode.TIER_NOT_FOUND)
    now = timezone.now()
    if not waitlist_open(event, now):
        raise Conflict(
            "The waiting list opens when the event is sold out.",
            code=ErrorCode.WAITLIST_CLOSED,
        )
    barred = join_barred(event_id=event.pk, customer_id=customer_id)
    if barred is not None:
        raise barred
    if QueueEntry.objects.filter(
        event_id=event.pk, customer_id=customer_id, status=QueueStatus.ADMITTED
    ).exists():
        raise Conflict(
            "You hold an admission for this event: claim your tickets with it.",
            code=ErrorCode.ALREADY_IN_QUEUE,
        )
    try:
        with transaction.atomic():
            state = _state_ensure(event, now)
            early = state.drawn_at is None and now < draw_due_at(state)
            entry = WaitlistEntry.objects.create(
                event_id=event.pk,
                customer_id=customer_id,
                tier_id=tier_id,
                score=0 if early else _now_us(now),
                drawn=early,
            )
            left_line = QueueEntry.objects.filter(
                event_id=event.pk, customer_id=customer_id, status=QueueStatus.WAITING
            ).update(status=QueueStatus.ABANDONED, finished_at=now)
    except IntegrityError as exc:
        constraint = violated_constraint(exc)
        if constraint == "waitlist_one_live_entry":
            raise Conflict(
                "You are already on this waiting list.", code=ErrorCode.ALREADY_ON_WAITLIST
            ) from exc
        raise Unauthenticated("Unknown customer.", code=ErrorCode.INVALID_TOKEN) from exc
    if left_line:
        queue_store().leave(event_id=event.pk, customer_id=customer_id)
    return entry


def _event_exists(event_id: uuid.UUID | str) -> None:
    if not Event.objects.filter(pk=event_id).exists():
        raise NotFound("No such event.", code=ErrorCode.EVENT_NOT_FOUND)


def _live_entry(event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> WaitlistEntry | None:
    return WaitlistEntry.objects.filter(
        event_id=event_id, customer_id=customer_id, status__in=WAITLIST_LIVE_STATUSES
    ).first()


def waitlist_leave(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> None:
    """WAITING or OFFERED -> LEFT (conditional). An offer given up gives its
    admission up too (ADMITTED -> ABANDONED), so the ticket goes to the next
    entry at the next offer round. 404 event_not_found / not_on_waitlist;
    503 busy when the entry changed under the call."""
    _event_exists(event_id)
    now = timezone.now()
    with transaction.atomic():
        entry = _live_entry(event_id, customer_id)
        if entry is None:
            raise NotFound("You are not on this waiting list.", code=ErrorCode.NOT_ON_WAITLIST)
        left = WaitlistEntry.objects.filter(pk=entry.pk, status=entry.status).update(
            status=WaitlistStatus.LEFT, finished_at=now
        )
        if not left:
            raise Busy("Your place on the waiting list changed; retry shortly.")
        if entry.status == WaitlistStatus.OFFERED and entry.queue_entry_id is not None:
            QueueEntry.objects.filter(pk=entry.queue_entry_id, status=QueueStatus.ADMITTED).update(
                status=QueueStatus.ABANDONED, finished_at=now
            )
    if entry.status == WaitlistStatus.OFFERED:
        admission_slot_release(event_id=event_id, customer_id=customer_id)


@dataclass(frozen=True)
class WaitlistPlace:
    entry: WaitlistEntry
    status: str
    position: int | None  # None until the first minute's draw, and once offered or over
    draw_at: datetime | None = None  # when an entry of the first minute learns its place
    offer_expires_at: datetime | None = None
    admission_token: str | None = None


def _ahead(entry: WaitlistEntry) -> int:
    """WAITING entries before this one that the same ticket would go to
    first: for a tier, those that want it or any tier; for any, all."""
    before = WaitlistEntry.objects.filter(
        event_id=entry.event_id, status=WaitlistStatus.WAITING
    ).filter(Q(score__lt=entry.score) | Q(score=entry.score, id__lt=entry.id))
    if entry.tier_id is not None:
        before = before.filter(Q(tier_id=entry.tier_id) | Q(tier__isnull=True))
    return before.count()


def waitlist_place(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> WaitlistPlace:
    """The customer's live entry, else their latest; with the place in the
    list (waiting), or the admission token and the window (offered).
    404 event_not_found / not_on_waitlist."""
    _event_exists(event_id)
    entry = _live_entry(event_id, customer_id) or (
        WaitlistEntry.objects.filter(event_id=event_id, customer_id=customer_id)
        .order_by("-joined_at")
        .first()
    )
    if entry is None:
        raise NotFound("You are not on this waiting list.", code=ErrorCode.NOT_ON_WAITLIST)
    if entry.status == WaitlistStatus.WAITING:
        if entry.drawn and entry.score == 0:
            state = WaitlistState.objects.filter(event_id=entry.event_id).first()
            draw_at = draw_due_at(state) if state is not None else None
            return WaitlistPlace(entry, entry.status, None, draw_at=draw_at)
        return WaitlistPlace(entry, entry.status, _ahead(entry) + 1)
    if entry.status == WaitlistStatus.OFFERED and entry.queue_entry_id is not None:
        admission = QueueEntry.objects.filter(pk=entry.queue_entry_id).first()
        if admission is not None and admission.status == QueueStatus.ADMITTED:
            until = admission.admission_expires_at
            assert until is not None  # an ADMITTED entry always has its window
            token = entry_admission_token(admission, until)
            return WaitlistPlace(
                entry, entry.status, None, offer_expires_at=until, admission_token=token
            )
        if admission is not None and admission.status == QueueStatus.COMPLETED:
            return WaitlistPlace(entry, WaitlistStatus.ACCEPTED.value, None)
        return WaitlistPlace(entry, WaitlistStatus.LAPSED.value, None)
    return WaitlistPlace(entry, entry.status, None)
