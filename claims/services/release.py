"""Releasing claims: their tickets return to sale (invariant 4). Postgres
first; the Redis counters and the event's status follow after commit."""

from __future__ import annotations

import logging
import uuid

import redis
from django.db import transaction
from django.utils import timezone

from claims.domain import CLAIM_MACHINE, UNPAID_RELEASE_SOURCES, ClaimStatus, ReleaseReason
from claims.models import Claim
from events.services import event_mark_available
from fairqueue.errors import ErrorCode, InvalidTransition, NotFound
from fairqueue.faults import fault_point
from inventory.services import tickets_free
from inventory.store import inventory_store

logger = logging.getLogger(__name__)


def claim_release(
    *,
    claim_id: uuid.UUID | str,
    reason: ReleaseReason,
    customer_id: uuid.UUID | str | None = None,
) -> Claim:
    """CLAIMED -> RELEASED (conditional), its ticket rows freed, then after
    commit the Redis counter gets them back and a SOLD_OUT event is ACTIVE
    again. With ``customer_id`` the claim must be theirs (someone else's is
    404). Anything but CLAIMED: 409 invalid_transition, nothing changes."""
    lookup = Claim.objects.filter(pk=claim_id)
    if customer_id is not None:
        lookup = lookup.filter(customer_id=customer_id)
    with transaction.atomic():
        claim = lookup.first()
        if claim is None:
            raise NotFound("No such claim.", code=ErrorCode.CLAIM_NOT_FOUND)
        updated = Claim.objects.filter(pk=claim.pk, status__in=UNPAID_RELEASE_SOURCES).update(
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
        freed = tickets_free(claim_ids=[claim.pk])
        tickets_returned_on_commit(event_id=claim.event_id, returned=freed)
    claim.refresh_from_db()
    return claim


def claim_release_paid(*, claim_id: uuid.UUID | str) -> Claim:
    """CONFIRMED -> RELEASED (reason ``refunded``, conditional): the money of a
    paid claim is going back to the customer, so its tickets return to sale
    exactly as in any release (invariant 4). Runs inside the caller's
    transaction (payments records the refund in the same one). Anything but
    CONFIRMED: 409 invalid_transition, nothing changes."""
    CLAIM_MACHINE.check(ClaimStatus.CONFIRMED, ClaimStatus.RELEASED)
    with transaction.atomic():
        claim = Claim.objects.filter(pk=claim_id).first()
        if claim is None:
            raise NotFound("No such claim.", code=ErrorCode.CLAIM_NOT_FOUND)
        updated = Claim.objects.filter(pk=claim.pk, status=ClaimStatus.CONFIRMED).update(
            status=ClaimStatus.RELEASED,
            released_at=timezone.now(),
            release_reason=ReleaseReason.REFUNDED.value,
        )
        if not updated:
            claim.refresh_from_db(fields=["status"])
            raise InvalidTransition(
                f"A {claim.status} claim is not a paid purchase to cancel.",
                details={"from": claim.status, "to": ClaimStatus.RELEASED.value},
            )
        freed = tickets_free(claim_ids=[claim.pk])
        tickets_returned_on_commit(event_id=claim.event_id, returned=freed)
    claim.refresh_from_db()
    logger.info("paid claim %s released (refunded): %s ticket(s) back on sale", claim.pk, freed)
    return claim


def tickets_returned_on_commit(*, event_id: object, returned: dict[object, int]) -> None:
    """Once the transaction that freed ticket rows commits: the Redis counters
    get them back and a SOLD_OUT event goes back on sale (admission resumes)."""

    def give_back() -> None:
        fault_point("claim_release.after_commit")
        store = inventory_store()
        for tier_id, quantity in returned.items():
            if quantity <= 0:
                continue
            try:
                store.give_back(event_id=event_id, tier_id=tier_id, quantity=quantity)
            except redis.RedisError:
                logger.warning("inventory give-back failed; reconciliation will heal it")
        event_mark_available(event_id=event_id)

    transaction.on_commit(give_back)
