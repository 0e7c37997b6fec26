"""Releasing claims: their tickets return to sale (invariant 4). Postgres
first; the Redis counters and the event's status follow after commit."""

from __future__ import annotations

import logging
import uuid

from django.db import transaction
from django.utils import timezone

from claims.domain import ClaimStatus, ReleaseReason, release_sources
from claims.models import Claim
from claims.services.account import purchase_balance, purchase_post
from claims.services.issuing import issued_tickets_void
from claims.services.resold import returns_end_for_claim
from claims.signals import claim_cancelled
from events.services import event_mark_available
from fairqueue.errors import ErrorCode, InvalidTransition, NotFound
from fairqueue.faults import fault_point
from fairqueue.news import send_on_commit
from inventory.seating.domain import SeatChange, SeatStatus
from inventory.seating.seatmap import seats_changed_on_commit
from inventory.services import Freed, tickets_free
from inventory.signals import tickets_freed
from inventory.store import inventory_store
from ledger.domain import cancel_moves

logger = logging.getLogger(__name__)


def claim_release(
    *,
    claim_id: uuid.UUID | str,
    reason: ReleaseReason,
    customer_id: uuid.UUID | str | None = None,
) -> Claim:
    """-> RELEASED (conditional), its ticket rows freed and its issued
    tickets voided, then after commit the Redis counter gets them back and a
    SOLD_OUT event is ACTIVE again. With ``customer_id`` the claim must be
    theirs (someone else's is 404).

    Every move out of CONFIRMED goes through here, so none can leave a valid
    ticket behind: only ``REFUNDED`` and ``STAFF`` may release a CONFIRMED
    claim (``release_sources``); the others release a CLAIMED one. A claim in
    any other status: 409 invalid_transition, nothing changes."""
    lookup = Claim.objects.filter(pk=claim_id)
    if customer_id is not None:
        lookup = lookup.filter(customer_id=customer_id)
    with transaction.atomic():
        claim = lookup.first()
        if claim is None:
            raise NotFound("No such claim.", code=ErrorCode.CLAIM_NOT_FOUND)
        updated = Claim.objects.filter(pk=claim.pk, status__in=release_sources(reason)).update(
            status=ClaimStatus.RELEASED,
            released_at=timezone.now(),
            release_reason=ReleaseReason(reason).value,
        )
        if not updated:
            claim.refresh_from_db(fields=["status"])
            raise InvalidTransition(
                f"A {claim.status} claim cannot be released.",
                details={"from": claim.status, "to": ClaimStatus.RELEASED.value},
            )
        if issued_tickets_void(claim_ids=[claim.pk], reason=ReleaseReason(reason).value):
            # A paid purchase was cancelled: the buyer hears of it.
            send_on_commit(
                claim_cancelled, sender=Claim, claim_id=claim.pk, reason=ReleaseReason(reason).value
            )
        if claim.status == ClaimStatus.CONFIRMED:  # only a paid purchase has returns
            returns_end_for_claim(claim_id=claim.pk, reason=ReleaseReason(reason).value)
            # Its account: the tickets it held are given up (the money stays
            # where it is: a refund, or staff, decide what becomes of it).
            purchase_post(
                claim,
                cancel_moves(purchase_balance(claim)),
                actor=str(ReleaseReason(reason).value),
            )
        freed = tickets_free(claim_ids=[claim.pk])
        tickets_returned_on_commit(event_id=claim.event_id, returned=freed)
    claim.refresh_from_db()
    return claim


def tickets_returned_on_commit(
    *, event_id: uuid.UUID | str, returned: dict[uuid.UUID, Freed]
) -> None:
    """Once the transaction that freed ticket rows commits: the Redis counters
    get them back (best effort: the inventory reconciliation heals a lost
    give-back, and a sync running meanwhile does not wipe it) and a SOLD_OUT
    event goes back on sale (admission resumes). The release is committed by
    then: if this fails (Redis or the event's row lock busy), it is logged
    and the inventory reconciliation finishes the job. Freed seats of a
    reserved tier are announced as available (``seats_changed``), and every
    tier's freed tickets as ``tickets_freed`` (the waiting list's offers)."""
    for tier_id, freed in returned.items():
        if freed.quantity > 0:
            send_on_commit(
                tickets_freed,
                sender=Claim,
                event_id=event_id,
                tier_id=tier_id,
                quantity=freed.quantity,
            )
        seats_changed_on_commit(
            event_id=event_id,
            tier_id=tier_id,
            changes=[SeatChange(label, SeatStatus.AVAILABLE) for label in freed.seats],
        )

    def give_back() -> None:
        fault_point("claim_release.after_commit")
        store = inventory_store()
        for tier_id, freed in returned.items():
            if freed.quantity > 0:
                store.give_back(
                    event_id=event_id,
                    tier_id=tier_id,
                    quantity=freed.quantity,
                    reservations=freed.reservations,
                )
        event_mark_available(event_id=event_id)

    transaction.on_commit(give_back, robust=True)
