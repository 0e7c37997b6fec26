"""Reads the customer pages and the catalogue API share."""

from __future__ import annotations

from events.models import Event
from inventory.selectors import available_tickets


def event_available(event: Event) -> dict[str, int]:
    """Approximate free tickets per tier id (Redis, Postgres where Redis does
    not know); the event's tiers come prefetched by ``events_public``."""
    return available_tickets(event_id=event.pk, tier_ids=[tier.pk for tier in event.tiers.all()])
