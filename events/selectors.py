"""Reads of events that need care."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from claims.domain import ClaimStatus
from events.domain import EventStatus
from events.models import Event, TicketTier
from fairqueue.errors import NotFound


def events_public() -> QuerySet[Event]:
    """Events customers may see: everything but drafts."""
    return Event.objects.exclude(status=EventStatus.DRAFT).prefetch_related("tiers")


def event_public_get(*, event_id: object) -> Event:
    event = events_public().filter(pk=event_id).first()
    if event is None:
        raise NotFound("No such event.", code="event_not_found")
    return event


def events_live() -> QuerySet[Event]:
    return Event.objects.filter(
        status__in=[EventStatus.ACTIVE, EventStatus.PAUSED, EventStatus.SOLD_OUT]
    )


@dataclass(frozen=True)
class TierTicketCounts:
    sold: int  # in CONFIRMED claims (paid)
    claimed: int  # in CLAIMED claims (held, payment pending)
    free: int


def tier_ticket_counts(*, event_id: object) -> dict[uuid.UUID, TierTicketCounts]:
    """Postgres truth per tier, in one query (the organizer's live numbers)."""
    rows = (
        TicketTier.objects.filter(event_id=event_id)
        .annotate(
            sold=Count("tickets", filter=Q(tickets__claim__status=ClaimStatus.CONFIRMED)),
            claimed=Count("tickets", filter=Q(tickets__claim__status=ClaimStatus.CLAIMED)),
            free=Count("tickets", filter=Q(tickets__claim__isnull=True)),
        )
        .values_list("id", "sold", "claimed", "free")
    )
    return {tier_id: TierTicketCounts(sold, claimed, free) for tier_id, sold, claimed, free in rows}
