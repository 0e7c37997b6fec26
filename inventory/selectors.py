"""Reads of ticket inventory: Postgres truth (invariant 3: a tier's ticket
rows not held by a CLAIMED or CONFIRMED claim, blocked seats left out), and the approximate numbers
customers see."""

from __future__ import annotations

import logging
import uuid

from django.db.models import Count, Q

from fairqueue.db import prepared_cursor
from inventory.models import Ticket
from inventory.store import inventory_store

logger = logging.getLogger(__name__)


def free_tickets_by_tier(*, event_id: uuid.UUID | str) -> dict[uuid.UUID, int]:
    """Postgres truth: free tickets per tier of an event (every tier that has
    ticket rows, with 0 when all are held)."""
    rows = (
        Ticket.objects.filter(tier__event_id=event_id)
        .values_list("tier_id")
        .annotate(free=Count("id", filter=Q(claim__isnull=True, blocked=False)))
        .order_by()
    )
    return dict(rows)


def resale_tickets_by_tier(*, event_id: uuid.UUID | str) -> dict[uuid.UUID, int]:
    """Free tickets per tier that are on resale (returned by their holder,
    ``resale_from`` set): what is still sold once the sale is over."""
    rows = (
        Ticket.objects.filter(tier__event_id=event_id)
        .values_list("tier_id")
        .annotate(
            free=Count("id", filter=Q(claim__isnull=True, blocked=False, resale_from__isnull=False))
        )
        .order_by()
    )
    return dict(rows)


def tier_free_tickets(*, tier_id: uuid.UUID) -> int:
    """Unheld ticket rows of a tier, including rows an in-flight claim has
    locked but not committed yet."""
    return Ticket.objects.filter(tier_id=tier_id, claim__isnull=True, blocked=False).count()


def tier_held_tickets(*, tier_id: uuid.UUID) -> int:
    """Ticket rows of a tier held by a claim (CLAIMED or CONFIRMED)."""
    return Ticket.objects.filter(tier_id=tier_id, claim__isnull=False).count()


# Asked after each of a sale's last claims (claims/services/claiming.py):
# written once and prepared, not compiled per claim.
_EVENT_HAS_FREE_TICKET_SQL = (
    f"SELECT EXISTS (SELECT 1 FROM {Ticket._meta.db_table} k "  # noqa: S608
    f"JOIN {Ticket._meta.get_field('tier').related_model._meta.db_table} t ON t.id = k.tier_id "
    "WHERE t.event_id = %s AND k.claim_id IS NULL AND NOT k.blocked)"
)


def event_has_free_ticket(*, event_id: uuid.UUID | str) -> bool:
    """Postgres truth: any tier of the event still has an unheld ticket."""
    with prepared_cursor() as cursor:
        cursor.execute(_EVENT_HAS_FREE_TICKET_SQL, [event_id])
        return bool(cursor.fetchone()[0])


def event_free_tickets(*, event_id: uuid.UUID | str) -> int:
    return Ticket.objects.filter(tier__event_id=event_id, claim__isnull=True, blocked=False).count()


def available_tickets(*, event_id: uuid.UUID | str, tier_ids: list[object]) -> dict[str, int]:
    """Approximate free tickets per tier: Redis, falling back to Postgres for
    missing counters or when Redis is down."""
    counts = inventory_store().available(event_id=event_id, tier_ids=tier_ids)
    if counts is None:  # Redis unreachable
        counts = {str(t): None for t in tier_ids}
    truth = free_tickets_by_tier(event_id=event_id) if None in counts.values() else {}
    return {
        t: max(0, v if v is not None else truth.get(uuid.UUID(t), 0)) for t, v in counts.items()
    }
