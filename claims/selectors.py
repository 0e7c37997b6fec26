"""Reads of claims that need care."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Q, Sum

from claims.domain import HOLDING_STATUSES, ClaimStatus
from claims.models import Claim
from events.models import TicketTier, TierKind
from fairqueue.errors import Conflict, ErrorCode, NotFound
from fairqueue.snapshots import SnapshotCache
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


@dataclass(frozen=True)
class TierSnapshot:
    """What a claim needs to know about its tier and event."""

    id: uuid.UUID
    event_id: uuid.UUID
    price: int
    currency: str
    event_status: str
    sale_start: datetime
    sale_end: datetime
    max_tickets_per_customer: int
    kind: str = TierKind.GENERAL

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
        )
        .first()
    )
    return TierSnapshot(*row) if row else None


_tiers = SnapshotCache(_load_tier, ttl_setting="CLAIMS_TIER_CACHE_SECONDS")


def tier_snapshot(*, tier_id: uuid.UUID | str) -> TierSnapshot | None:
    """The tier and its event (None when unknown), cached per process for
    ``CLAIMS_TIER_CACHE_SECONDS`` (default 1 s): the claim's hot path does not
    read them every time. A stale answer cannot sell what is not there: the
    claim transaction itself checks the admission and takes ticket rows."""
    return _tiers.get(tier_id)


def tier_snapshot_forget() -> None:
    _tiers.forget()


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
    sold: int  # in CONFIRMED claims (paid)
    claimed: int  # in CLAIMED claims (held, payment pending)
    free: int


def tier_ticket_counts(*, event_id: uuid.UUID | str) -> dict[uuid.UUID, TierTicketCounts]:
    """Postgres truth per tier, in one query (the organizer's live numbers)."""
    rows = (
        TicketTier.objects.filter(event_id=event_id)
        .annotate(
            sold=Count("tickets", filter=Q(tickets__claim__status=ClaimStatus.CONFIRMED)),
            claimed=Count("tickets", filter=Q(tickets__claim__status=ClaimStatus.CLAIMED)),
            free=Count("tickets", filter=Q(tickets__claim__isnull=True, tickets__blocked=False)),
        )
        .values_list("id", "sold", "claimed", "free")
    )
    return {tier_id: TierTicketCounts(sold, claimed, free) for tier_id, sold, claimed, free in rows}
