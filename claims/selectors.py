"""Reads of claims that need care."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db.models import Count, Q, Sum

from claims.domain import HOLDING_STATUSES, ClaimStatus
from claims.models import Claim
from events.models import TicketTier
from fairqueue.errors import Conflict, ErrorCode, NotFound
from queueing.services import JoinBar


def claim_get_for_customer(*, claim_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> Claim:
    """The customer's own claim; someone else's is as unknown as a missing one."""
    claim = Claim.objects.filter(pk=claim_id, customer_id=customer_id).first()
    if claim is None:
        raise NotFound("No such claim.", code=ErrorCode.CLAIM_NOT_FOUND)
    return claim


def already_claimed(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> Conflict:
    """The already_claimed error, naming the claim that holds the tickets, so
    a customer who lost its id (a reload, an answer lost to a dropped
    connection) can find it again with ``GET claims/{id}/``."""
    held = (
        Claim.objects.filter(
            event_id=event_id, customer_id=customer_id, status__in=HOLDING_STATUSES
        )
        .values_list("id", "status")
        .first()
    )
    details = {"claim_id": str(held[0]), "claim_status": held[1]} if held else {}
    return Conflict(
        "You already hold tickets for this event.", code=ErrorCode.ALREADY_CLAIMED, details=details
    )


_HOLDING_SQL = ", ".join(f"'{status.value}'" for status in HOLDING_STATUSES)


def join_bar() -> JoinBar:
    """Invariant 6 in the queue join's INSERT: a customer holding a CLAIMED or
    CONFIRMED claim for the event is refused with ``already_claimed``."""
    return JoinBar(
        sql=(
            f"EXISTS (SELECT 1 FROM {Claim._meta.db_table} "  # noqa: S608
            "WHERE event_id = %(event_id)s AND customer_id = %(customer_id)s "
            f"AND status IN ({_HOLDING_SQL}))"
        ),
        error=lambda event_id, customer_id: already_claimed(
            event_id=event_id, customer_id=customer_id
        ),
    )


def customer_holds_purchase(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> bool:
    """Invariant 6: a CLAIMED or CONFIRMED claim for the event."""
    return Claim.objects.filter(
        event_id=event_id, customer_id=customer_id, status__in=HOLDING_STATUSES
    ).exists()


def tier_tickets_held(*, tier_id: uuid.UUID) -> int:
    """Tickets in CLAIMED and CONFIRMED claims of a tier, counted from the
    claims themselves (not from the ticket rows): what invariant 1 bounds."""
    total = Claim.objects.filter(tier_id=tier_id, status__in=HOLDING_STATUSES).aggregate(
        total=Sum("quantity")
    )["total"]
    return int(total or 0)


def claims_open_count(*, event_id: uuid.UUID | str) -> int:
    return Claim.objects.filter(event_id=event_id, status=ClaimStatus.CLAIMED).count()


@dataclass(frozen=True)
class TierTicketCounts:
    sold: int  # paid for and held: in CONFIRMED claims, or on resale (still its buyer's)
    claimed: int  # in CLAIMED claims (held, payment pending), not on resale
    free: int  # never sold and on sale now
    on_resale: int = 0  # of ``sold``: returned and on sale again until resold


def tier_ticket_counts(*, event_id: uuid.UUID | str) -> dict[uuid.UUID, TierTicketCounts]:
    """Postgres truth per tier, in one query (the organizer's live numbers).
    A ticket returned for resale stays sold (its first buyer holds it) until
    someone else has paid for it; then it is sold once, to them. So sold,
    claimed and free add up to the tickets that are not blocked."""
    on_resale = Q(tickets__resale_from__isnull=False)
    rows = (
        TicketTier.objects.filter(event_id=event_id)
        .annotate(
            sold=Count(
                "tickets", filter=Q(tickets__claim__status=ClaimStatus.CONFIRMED) | on_resale
            ),
            claimed=Count(
                "tickets", filter=Q(tickets__claim__status=ClaimStatus.CLAIMED) & ~on_resale
            ),
            free=Count(
                "tickets",
                filter=Q(tickets__claim__isnull=True, tickets__blocked=False) & ~on_resale,
            ),
            on_resale=Count("tickets", filter=on_resale),
        )
        .values_list("id", "sold", "claimed", "free", "on_resale")
    )
    return {tier_id: TierTicketCounts(*counts) for tier_id, *counts in rows}
