"""What staff do to odd payments from the admin, each written to the log
(docs/PAYMENTS.md says which flag calls for which)."""

from __future__ import annotations

import uuid

from django.db import transaction
from django.db.models import F

from claims.domain import ClaimStatus, ReleaseReason
from claims.services import claim_lock, claim_release, purchase_post
from fairqueue.errors import InvalidInput, InvalidTransition
from ledger.domain import outside_refund_moves
from payments.domain import DISPUTE_NEEDS_STAFF, LIVE_STATUSES, EventKind, PaymentStatus
from payments.models import Payment, Refund
from payments.paystack import GatewayTransientError
from payments.services.disputes import dispute_close
from payments.services.outcomes import apply_failure, payment_lock
from payments.services.records import payment_log, payment_transition
from payments.services.refunds import payment_refund, refundable_amount
from payments.services.verify import payment_verify_and_apply

P = PaymentStatus


def payment_verify_now(*, payment_id: uuid.UUID, actor: str) -> str:
    """Ask the gateway now and apply its answer (a success for a failed
    payment takes the late-success path; a decline keeps the claim until its
    expiry, as for the buyer's own look). Returns what happened."""
    payment = Payment.objects.get(pk=payment_id)
    payment_log(
        payment=payment, kind=EventKind.STAFF_ACTION, actor=actor, data={"action": "verify"}
    )
    if payment.status == P.REFUNDED:
        return "refunded"
    try:
        return payment_verify_and_apply(payment_id=payment_id, actor=actor, release_claim=False)
    except GatewayTransientError:
        return "gateway_unavailable"


def payment_fail_and_release(*, payment_id: uuid.UUID, actor: str, note: str = "") -> Payment:
    """Give up on a live payment and release its claim. A live payment holds
    no money: any success the gateway reported moved it on (confirmed, or
    on the refund path), and one that arrives later takes the late-success
    path."""
    with transaction.atomic():
        payment = payment_lock(payment_id=payment_id)
        if payment.status not in LIVE_STATUSES:
            raise InvalidTransition(
                f"Only a live payment can be failed (this one is {payment.status})."
            )
        payment_log(
            payment=payment,
            kind=EventKind.STAFF_ACTION,
            actor=actor,
            data={"action": "fail_and_release", "note": note},
        )
        apply_failure(
            payment=payment,
            reason=f"failed by staff{': ' + note if note else ''}",
            actor=actor,
            release_claim=True,
            release_reason=ReleaseReason.STAFF,
        )
    return payment


def payment_mark_refunded(*, payment_id: uuid.UUID, actor: str, note: str = "") -> Payment:
    """The money went back outside our refund calls, and staff record it: a
    refund made by hand for a REFUND_REQUIRED or REFUND_FAILED payment, or a
    paid payment whose dispute was lost or that the bank reversed (its claim
    is released then: the tickets go back on sale)."""
    with transaction.atomic():
        payment = payment_lock(payment_id=payment_id)
        allowed = payment.status in (P.REFUND_REQUIRED, P.REFUND_FAILED) or (
            payment.status == P.CONFIRMED and payment.dispute in DISPUTE_NEEDS_STAFF
        )
        if not allowed:
            raise InvalidTransition(
                "Only a REFUND_REQUIRED or REFUND_FAILED payment, or a disputed or reversed "
                f"CONFIRMED one, can be marked refunded (this one is {payment.status})."
            )
        payment_log(
            payment=payment,
            kind=EventKind.STAFF_ACTION,
            actor=actor,
            data={"action": "mark_refunded", "note": note},
        )
        # What went back is what the purchase's account still held for the
        # buyer: never a ticket sent on or resold (those stay with their
        # holders, and a resale's refund is its own).
        source = payment.status
        claim = claim_lock(claim_id=payment.claim_id)
        returned = refundable_amount(payment)
        payment_transition(
            payment=payment,
            target=P.REFUNDED,
            actor=actor,
            reason=note or "refunded outside FairQueue (recorded by staff)",
        )
        Payment.objects.filter(pk=payment.pk).update(
            refunded_amount=F("refunded_amount") + returned
        )
        if returned:
            purchase_post(
                claim,
                outside_refund_moves(refund_id=None, amount=returned, settled=True),
                actor=actor,
                payment_id=payment.pk,
                note=note or "refunded outside FairQueue (recorded by staff)",
            )
        if source == P.CONFIRMED and claim.status == ClaimStatus.CONFIRMED:
            claim_release(claim_id=claim.pk, reason=ReleaseReason.REFUNDED)
        dispute_close(payment=payment, actor=actor, note="money returned")
    return payment


def payment_refund_by_staff(
    *, payment_id: uuid.UUID, actor: str, reason: str, amount: int | None = None
) -> Refund:
    """Refund through the gateway (all that is left, or ``amount`` minor
    units). A CONFIRMED payment's purchase is cancelled: its tickets go back
    on sale. A reason is required; it goes to the gateway as the merchant note."""
    if not reason.strip():
        raise InvalidInput("A refund needs a reason.", details={"reason": "required"})
    return payment_refund(
        payment_id=payment_id, actor=actor, reason=reason, amount=amount, staff_action=True
    )


def payment_keep_tickets(*, payment_id: uuid.UUID, actor: str, note: str = "") -> Payment:
    """Staff looked at a disputed or reversed payment and keep its tickets
    valid: the flag comes down on the payment and its claim."""
    with transaction.atomic():
        payment = payment_lock(payment_id=payment_id)
        payment_log(
            payment=payment,
            kind=EventKind.STAFF_ACTION,
            actor=actor,
            data={"action": "keep_tickets", "note": note},
        )
        if not dispute_close(payment=payment, actor=actor, note=note or "tickets kept"):
            raise InvalidTransition("This payment has no open dispute or reversal.")
    return payment
