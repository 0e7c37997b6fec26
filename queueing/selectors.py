"""Reads of the waiting room that need care."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import Count, Q

from events.models import Event, TicketTier
from fairqueue.snapshots import SnapshotCache
from queueing.domain import (
    LIVE_STATUSES,
    WAITLIST_LIVE_STATUSES,
    EndReason,
    QueueStatus,
    WaitlistStatus,
    any_tier_price,
)
from queueing.models import AdmissionState, QueueEntry, WaitlistEntry
from queueing.store import queue_store


@dataclass(frozen=True)
class EventSnapshot:
    """What the hot paths need to know about an event, cached per process for
    a second: joins and position reads do not read the event row each time
    (admission, which reads it every tick, is what really gates)."""

    id: uuid.UUID
    status: str
    sale_start: datetime
    sale_end: datetime
    prequeue_opens_at: datetime | None
    admission_batch_size: int
    prequeue_shuffled_at: datetime | None
    returns_until: datetime | None = None


def _load_event(event_id: uuid.UUID | str) -> EventSnapshot | None:
    row = (
        Event.objects.filter(pk=event_id)
        .values_list(
            "id",
            "status",
            "sale_start",
            "sale_end",
            "prequeue_opens_at",
            "admission_batch_size",
            "prequeue_shuffled_at",
            "returns_until",
        )
        .first()
    )
    return EventSnapshot(*row) if row else None


# How old the event the join and position paths read may be: a second of a
# stale status (a pause, the end of a sale) is harmless, as the statements
# that write check it again, and saves a read on nearly every request.
EVENT_CACHE_SECONDS = 1.0
_events = SnapshotCache(_load_event, ttl=lambda: EVENT_CACHE_SECONDS)


def event_snapshot(*, event_id: uuid.UUID | str) -> EventSnapshot | None:
    """The event (None when unknown), at most ``EVENT_CACHE_SECONDS`` old."""
    return _events.get(event_id)


def event_snapshot_forget(event_id: uuid.UUID | str | None = None) -> None:
    _events.forget(event_id)


def fallback_rate(*, batch_size: int) -> float:
    """Admissions per second before any tick was measured: a full batch per tick."""
    return batch_size / settings.ADMISSION_INTERVAL_SECONDS


def entry_live(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> QueueEntry | None:
    return (
        QueueEntry.objects.filter(event_id=event_id, customer_id=customer_id)
        .filter(status__in=LIVE_STATUSES)
        .first()
    )


def entry_latest(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> QueueEntry | None:
    """The live entry, else the most recent finished one."""
    live = entry_live(event_id=event_id, customer_id=customer_id)
    if live is not None:
        return live
    return (
        QueueEntry.objects.filter(event_id=event_id, customer_id=customer_id)
        .order_by("-joined_at")
        .first()
    )


def waiting_rank(*, entry: QueueEntry) -> int:
    """Postgres fallback of the sorted-set rank (0-based): WAITING entries
    ordered before this one. Ties on score are broken by customer id, as
    Redis breaks them by member."""
    return (
        QueueEntry.objects.filter(event_id=entry.event_id, status=QueueStatus.WAITING)
        .filter(Q(score__lt=entry.score) | Q(score=entry.score, customer_id__lt=entry.customer_id))
        .count()
    )


def admission_window_open(*, entry: QueueEntry, now: datetime) -> bool:
    """The entry is ADMITTED and its window open: not yet run out, or kept
    open by the event's stopped admission clock (queueing/services/clock.py)."""
    if entry.status != QueueStatus.ADMITTED or entry.admission_expires_at is None:
        return False
    if entry.admission_expires_at > now:
        return True
    stopped = (
        AdmissionState.objects.filter(pk=entry.event_id)
        .values_list("stopped_since", flat=True)
        .first()
    )
    return stopped is not None and entry.admission_expires_at > stopped


def admissions_ended(*, event_id: uuid.UUID | str) -> tuple[int, int]:
    """(lapsed, claimed): the event's admissions from the line (not the
    waiting list's offers) that ran out of time to choose, and that became
    a claim. Their ratio is the measured share of no-shows."""
    ended = QueueEntry.objects.filter(
        event_id=event_id,
        offer_tier__isnull=True,
        status__in=[QueueStatus.EXPIRED, QueueStatus.COMPLETED],
    ).aggregate(
        lapsed=Count(
            "id", filter=Q(status=QueueStatus.EXPIRED, end_reason=EndReason.ADMISSION_WINDOW)
        ),
        claimed=Count("id", filter=Q(status=QueueStatus.COMPLETED)),
    )
    return int(ended["lapsed"]), int(ended["claimed"])


def open_offers(*, event_id: uuid.UUID | str) -> bool:
    """Does the event's waiting list hold an offer still open?"""
    return QueueEntry.objects.filter(
        event_id=event_id, status=QueueStatus.ADMITTED, offer_tier__isnull=False
    ).exists()


def admission_ended_sold_out(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> bool:
    """The customer's latest entry is an admission that ended because nothing
    was left (they are first on the waiting list)."""
    entry = entry_latest(event_id=event_id, customer_id=customer_id)
    return (
        entry is not None
        and entry.status == QueueStatus.EXPIRED
        and entry.end_reason == EndReason.SOLD_OUT
    )


def waiting_count(*, event_id: uuid.UUID | str) -> int:
    return QueueEntry.objects.filter(event_id=event_id, status=QueueStatus.WAITING).count()


def admission_last_ticks(*, event_ids: list[uuid.UUID]) -> dict[uuid.UUID, datetime]:
    """When the admission tick last ran for each event (the events that never
    ticked are left out). Every tick of a live event writes it, whatever it
    admitted, and with or without Redis: a missing or old one means no tick
    ran (beat or the workers down or stuck), never "nothing to admit"."""
    rows = AdmissionState.objects.filter(
        event_id__in=event_ids, last_tick_at__isnull=False
    ).values_list("event_id", "last_tick_at")
    return {event_id: at for event_id, at in rows if at is not None}


def admission_last_tick(*, event_id: uuid.UUID | str) -> datetime | None:
    """When the admission tick last ran for the event; None: never."""
    return (
        AdmissionState.objects.filter(event_id=event_id)
        .values_list("last_tick_at", flat=True)
        .first()
    )


def queue_length(*, event_id: uuid.UUID | str) -> int:
    """Customers waiting: the sorted set's size, or Postgres when Redis is
    down or does not hold the whole line."""
    waiting = queue_store().line_length(event_id=event_id)
    return waiting if waiting is not None else waiting_count(event_id=event_id)


@dataclass(frozen=True)
class WaitlistLine:
    """One row of an event's waiting list as the organizer sees it."""

    tier: str  # the tier's name, or "any tier"
    waiting: int
    offered: int
    revenue: int  # minor units: what the waiting entries would pay at face value
    currency: str


def waitlist_summary(*, event_id: uuid.UUID | str) -> list[WaitlistLine]:
    """Per tier wanted (and "any tier"): entries waiting, offers open, and the
    revenue the waiting ones represent at face value (``any_tier_price``
    for an entry for any tier)."""
    tiers = list(
        TicketTier.objects.filter(event_id=event_id)
        .order_by("sort_order", "price", "name")
        .values_list("id", "name", "price")
    )
    if not tiers:
        return []
    counts: dict[tuple[object, str], int] = {}
    rows = (
        WaitlistEntry.objects.filter(event_id=event_id, status__in=WAITLIST_LIVE_STATUSES)
        .values_list("tier_id", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    for tier_id, status, n in rows:
        counts[(tier_id, status)] = n
    currency = Event.objects.filter(pk=event_id).values_list("currency", flat=True).first() or ""
    anyone = any_tier_price(price for _, _, price in tiers)
    lines = []
    for tier_id, name, price in [*tiers, (None, "any tier", anyone)]:
        waiting = counts.get((tier_id, WaitlistStatus.WAITING.value), 0)
        offered = counts.get((tier_id, WaitlistStatus.OFFERED.value), 0)
        lines.append(WaitlistLine(name, waiting, offered, waiting * price, currency))
    return lines
