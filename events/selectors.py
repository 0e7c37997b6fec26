"""Reads of events that need care."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from events.domain import EventStatus
from events.models import Event, TicketTier, TierKind
from fairqueue.errors import ErrorCode, NotFound
from fairqueue.snapshots import SnapshotCache
from inventory.selectors import available_tickets


def events_public() -> QuerySet[Event]:
    """Events customers may see: everything but drafts."""
    return Event.objects.exclude(status=EventStatus.DRAFT).prefetch_related("tiers")


def event_public_get(*, event_id: uuid.UUID | str) -> Event:
    event = events_public().filter(pk=event_id).first()
    if event is None:
        raise NotFound("No such event.", code=ErrorCode.EVENT_NOT_FOUND)
    return event


def events_live() -> QuerySet[Event]:
    return Event.objects.filter(
        status__in=[EventStatus.ACTIVE, EventStatus.PAUSED, EventStatus.SOLD_OUT]
    )


def event_available(event: Event) -> dict[str, int]:
    """Approximate free tickets per tier id (Redis, Postgres where Redis does
    not know); the event's tiers come prefetched by ``events_public``."""
    return available_tickets(event_id=event.pk, tier_ids=[tier.pk for tier in event.tiers.all()])


# How many wait in an event's line: the waiting room (queueing, above events)
# gives its reader at start-up, as claims gives queueing its join bar.
_queue_length: Callable[..., int] | None = None


def queue_length_reader_set(reader: Callable[..., int]) -> None:
    global _queue_length
    _queue_length = reader


def event_queue_length(*, event_id: uuid.UUID | str) -> int | None:
    """Customers waiting for the event (None when no waiting room is installed)."""
    return _queue_length(event_id=event_id) if _queue_length is not None else None


@dataclass(frozen=True)
class TierSnapshot:
    """A tier and its event as the hot paths read them (a claim, the seat map)."""

    id: uuid.UUID
    event_id: uuid.UUID
    price: int
    currency: str
    event_status: str
    sale_start: datetime
    sale_end: datetime
    max_tickets_per_customer: int
    kind: str = TierKind.GENERAL
    returns_until: datetime | None = None

    @property
    def reserved(self) -> bool:
        return self.kind == TierKind.RESERVED


def _load_tier(tier_id: uuid.UUID | str) -> TierSnapshot | None:
    row = (
        TicketTier.objects.filter(pk=tier_id)
        .values_list(
            "id",
            "event_id",
            "price",
            "event__currency",
            "event__status",
            "event__sale_start",
            "event__sale_end",
            "event__max_tickets_per_customer",
            "kind",
            "event__returns_until",
        )
        .first()
    )
    return TierSnapshot(*row) if row else None


# How old the tier a claim or the seat map reads may be (see ``tier_snapshot``).
TIER_CACHE_SECONDS = 1.0
_tiers = SnapshotCache(_load_tier, ttl=lambda: TIER_CACHE_SECONDS)


def tier_snapshot(*, tier_id: uuid.UUID | str) -> TierSnapshot | None:
    """The tier and its event (None when unknown), cached per process for
    ``TIER_CACHE_SECONDS``: the claim's hot path and the
    seat map do not read them every time. A stale answer cannot sell what is not there: the
    claim transaction itself checks the admission and takes ticket rows."""
    return _tiers.get(tier_id)


def tier_snapshot_forget() -> None:
    _tiers.forget()
