"""What staff do to odd payments from the admin, each written to the log."""

from __future__ import annotations

import uuid

from django.db import transaction

from claims.domain import ClaimStatus, ReleaseReason
from claims.services import claim_lock, claim_release
from fairqueue.errors import InvalidTransition
from payments.domain import LIVE_STATUSES, EventKind, PaymentStatus
from payments.models import Payment
from payments.paystack import GatewayTransientError
from payments.services.outcomes import apply_failure, payment_lock
from payments.services.records import payment_log, payment_transition
from payments.services.verify import payment_verify_and_apply

P = PaymentStatus


def payment_verify_now(*, payment_id: uuid.UUID, actor: str) -> str:
    """Ask the gateway now and apply its answer (a success for a failed
    payment takes the late-success path). Returns what happened."""
    payment = Payment.objects.get(pk=payment_id)
    payment_log(
        payment=payment, kind=EventKind.STAFF_ACTION, actor=actor, data={"action": "verify"}
    )
    if payment.status == P.REFUNDED:
        return "refunded"
    try:
        return payment_verify_and_apply(payment_id=payment_id, actor=actor, release_claim=True)
    except GatewayTransientError:
        return "gateway_unavailable"


def payment_fail_and_release(*, payment_id: uuid.UUID, actor: str, note: str = "") -> Payment:
    """Give up on a live payment and release its claim. If the gateway has
    already reported money for it (a flagged mismatch), it becomes
    REFUND_REQUIRED instead of FAILED: the customer must get it back."""
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
        if payment.paid_amount is not None:
            payment_transition(
                payment=payment,
                target=P.REFUND_REQUIRED,
                actor=actor,
                reason="staff gave up on a paid (flagged) payment",
            )
            claim = claim_lock(claim_id=payment.claim_id)
            if claim.status == ClaimStatus.CLAIMED:
                claim_release(claim_id=claim.pk, reason=ReleaseReason.STAFF)
        else:
            apply_failure(
                payment=payment,
                reason=f"failed by staff{': ' + note if note else ''}",
                actor=actor,
                release_claim=True,
                release_reason=ReleaseReason.STAFF,
            )
    return payment


def payment_mark_refunded(*, payment_id: uuid.UUID, actor: str, note: str = "") -> Payment:
    """Staff refunded the customer (in the gateway's dashboard): record it."""
    with transaction.atomic():
        payment = payment_lock(payment_id=payment_id)
        payment_log(
            payment=payment,
            kind=EventKind.STAFF_ACTION,
            actor=actor,
            data={"action": "mark_refunded", "note": note},
        )
        if not payment_transition(
            payment=payment, target=P.REFUNDED, actor=actor, reason=note or "refunded by staff"
        ):
            raise InvalidTransition(
                f"Only a REFUND_REQUIRED payment can be marked refunded (this one is "
                f"{payment.status})."
            )
    return payment
