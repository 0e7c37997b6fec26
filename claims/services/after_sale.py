"""A claim once the sale is over, while returns are open: only the admission
of a waiting-list offer may claim, and it takes a ticket on resale (returned
by its holder), never one that was never sold. Postgres alone: a handful of
claims, one ticket each; the Redis counter is brought to truth after commit."""

from __future__ import annotations

import uuid
from typing import NoReturn

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from claims.models import Claim
from claims.selectors import already_claimed
from claims.services.refusals import refuse_admission
from claims.services.tickets import claim_insert, is_one_purchase_violation
from events.domain import resale_after_sale
from events.selectors import TierSnapshot
from fairqueue.errors import Busy, Conflict, ErrorCode, Gone
from inventory.models import Ticket
from inventory.seating.domain import SeatChange, SeatStatus
from inventory.seating.seatmap import seats_changed_on_commit
from inventory.services import inventory_sync_event
from queueing.services import queue_entry_complete
from queueing.tokens import Admission


def offer_claims_after_sale(tier: TierSnapshot, admission: Admission) -> bool:
    """The sale is over: may this admission still claim? Only an offer's
    (it names its tier), and only while returns are open."""
    return admission.tier_id is not None and resale_after_sale(
        status=tier.event_status,
        now=timezone.now(),
        sale_end=tier.sale_end,
        returns_until=tier.returns_until,
    )


class _AdmissionUsed(Exception):
    """The queue entry was no longer ADMITTED with its window open."""


class _Short(Exception):
    """Fewer tickets on resale could be taken than asked for."""


def _on_resale(tier_id: uuid.UUID) -> QuerySet[Ticket]:
    return Ticket.objects.filter(
        tier_id=tier_id, claim__isnull=True, blocked=False, resale_from__isnull=False
    )


def claim_insert_after_sale(
    claim: Claim, *, tier: TierSnapshot, entry_id: uuid.UUID | str, chosen: tuple[str, ...]
) -> Claim:
    """One transaction: the admission used up (ADMITTED -> COMPLETED, window
    open), the claim row, and ticket rows on resale taken with SKIP LOCKED
    (the chosen seats, on a reserved tier). A withdrawal of the same return
    is the same conditional move of the row, so exactly one of them gets it.
    Errors as a claim's: 403 admission_expired, 409 already_claimed /
    seats_unavailable, 410 sold_out (no returned ticket left), 503 busy."""
    rows = _on_resale(tier.id)
    if chosen:
        rows = rows.filter(label__in=chosen)
    try:
        with transaction.atomic():
            if not queue_entry_complete(entry_id=entry_id):
                raise _AdmissionUsed
            claim_insert(claim)
            picked = list(
                rows.select_for_update(skip_locked=True)
                .order_by("pk")
                .values_list("pk", "label")[: claim.quantity]
            )
            if len(picked) < claim.quantity:
                raise _Short
            Ticket.objects.filter(pk__in=[pk for pk, _ in picked]).update(claim_id=claim.pk)
            labels = [label for _, label in picked if label]
            if labels and not chosen:
                Claim.objects.filter(pk=claim.pk).update(seats=labels)
                claim.seats = labels
    except IntegrityError as exc:
        if is_one_purchase_violation(exc):
            raise already_claimed(event_id=tier.event_id, customer_id=claim.customer_id) from exc
        raise
    except _AdmissionUsed:
        refuse_admission(tier, claim.customer_id)
    except _Short:
        _refuse_short(tier, claim.quantity, chosen)
    if claim.seats:
        seats_changed_on_commit(
            event_id=tier.event_id,
            tier_id=tier.id,
            changes=[SeatChange(label, SeatStatus.HELD) for label in claim.seats],
        )
    event_id, tier_id = tier.event_id, tier.id
    transaction.on_commit(
        lambda: inventory_sync_event(event_id=event_id, tier_ids=[tier_id]), robust=True
    )
    return claim


def _refuse_short(tier: TierSnapshot, quantity: int, chosen: tuple[str, ...]) -> NoReturn:
    if chosen:
        raise Conflict(
            "Some of the chosen seats are not on resale.",
            code=ErrorCode.SEATS_UNAVAILABLE,
            details={"seats": list(chosen)},
        )
    if _on_resale(tier.id).count() >= quantity:
        raise Busy("Tickets are being claimed right now; retry shortly.")
    raise Gone("No returned ticket is left.", code=ErrorCode.SOLD_OUT)
