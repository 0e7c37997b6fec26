"""What the payments app (above claims) needs to change on a claim while a
payment is in flight. Each runs inside the payments transaction that moves
the payment, so the claim and the payment change together."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from claims.domain import ClaimStatus
from claims.models import Claim
from fairqueue.errors import ErrorCode, NotFound
from fairqueue.locks import claim_row_lock


def claim_lock(*, claim_id: uuid.UUID | str, customer_id: uuid.UUID | str | None = None) -> Claim:
    """The claim row, locked until the caller's transaction ends (a wait past
    the lock timeout is 503 busy). With ``customer_id`` it must be theirs:
    someone else's claim is as unknown as a missing one."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("claim_lock needs the caller's transaction")
    lookup = Claim.objects.select_related("customer").filter(pk=claim_id)
    if customer_id is not None:
        lookup = lookup.filter(customer_id=customer_id)
    claim = claim_row_lock(lookup)
    if claim is None:
        raise NotFound("No such claim.", code=ErrorCode.CLAIM_NOT_FOUND)
    return claim


def claim_payment_started(*, claim: Claim) -> None:
    """A payment for the (locked, CLAIMED) claim is in flight from now on:
    claim expiry leaves it to the payments app (invariant 5)."""
    if claim.status != ClaimStatus.CLAIMED:
        raise ValueError(f"a {claim.status} claim cannot start a payment")
    Claim.objects.filter(pk=claim.pk).update(payment_in_flight=True)
    claim.payment_in_flight = True


def claim_payment_ended(*, claim_id: uuid.UUID | str) -> None:
    """The claim's payment is no longer in flight (it was confirmed or
    failed): expiry may look at the claim again."""
    Claim.objects.filter(pk=claim_id, payment_in_flight=True).update(payment_in_flight=False)


def claim_extend(*, claim_id: uuid.UUID | str, seconds: float) -> bool:
    """Give a CLAIMED claim ``seconds`` more to be paid (conditional): the
    time a payment could not start through no fault of the customer (the
    gateway refused our merchant account). False when it is not CLAIMED."""
    if seconds <= 0:
        return False
    return bool(
        Claim.objects.filter(pk=claim_id, status=ClaimStatus.CLAIMED).update(
            expires_at=F("expires_at") + timedelta(seconds=seconds)
        )
    )


def claim_dispute_flag(*, claim_id: uuid.UUID | str) -> None:
    """The claim's payment is disputed or reversed at the customer's bank:
    staff decide what becomes of the tickets (they stay valid until then)."""
    Claim.objects.filter(pk=claim_id, disputed_at__isnull=True).update(disputed_at=timezone.now())


def claim_dispute_clear(*, claim_id: uuid.UUID | str) -> None:
    """Staff (or the bank, ruling for us) settled the dispute: no flag."""
    Claim.objects.filter(pk=claim_id, disputed_at__isnull=False).update(disputed_at=None)
