"""Giving money back through the gateway's Refund API (``POST /refund``).

Like a payment, a refund is written first (``Refund`` in REQUESTED, the
payment moved to REFUND_PENDING, the request in the log), then the gateway is
called outside any transaction, then its answer is recorded. The refund's
webhooks (``refund.pending`` / ``processed`` / ``failed``) and reconciliation
(``GET /refund/:id``) move it on: REFUND_PENDING -> REFUNDED, or REFUND_FAILED
for staff. Refunding a CONFIRMED payment cancels the purchase: its claim is
released (reason ``refunded``) and its tickets go back on sale, in the same
transaction that records the refund. A partial refund cancels it too (the
rest is kept, e.g. as a cancellation fee); see docs/PAYMENTS.md.

One refund per payment is open at a time (a partial unique index): the
gateway's refund events name the transaction, so they can only be that one's.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Sum
from django.utils import timezone

from claims.domain import ClaimStatus, ReleaseReason
from claims.models import Claim
from claims.services import claim_lock, claim_release, purchase_balance, purchase_post
from fairqueue.errors import InvalidInput, InvalidTransition
from fairqueue.money import money_format
from ledger.domain import (
    Bucket,
    outside_refund_moves,
    refund_end_moves,
    refund_moves,
    refundable,
    resale_owed,
)
from payments.domain import (
    DISPUTE_NEEDS_STAFF,
    OPEN_REFUND_STATUSES,
    PAID_STATUSES,
    REFUNDABLE_STATUSES,
    DisputeState,
    EventKind,
    PaymentStatus,
    RefundStatus,
    refund_amount_error,
    refund_status_of,
)
from payments.models import Payment, Refund
from payments.paystack import GatewayPermanentError, GatewayTransientError, PaystackClient
from payments.services.disputes import dispute_mark
from payments.services.incidents import gateway_incident_record, gateway_incident_resolve
from payments.services.outcomes import payment_lock, refund_lock
from payments.services.records import lease_seconds, payment_log, payment_transition

logger = logging.getLogger(__name__)

# ``Refund.requested_by`` of a refund made outside FairQueue (the gateway's dashboard).
GATEWAY = "gateway"


def refund_note_prefix(refund_id: uuid.UUID | str) -> str:
    """How the merchant note we send with a refund starts: it names our refund."""
    return f"FairQueue refund {refund_id}"


P = PaymentStatus
R = RefundStatus


def refundable_amount(payment: Payment) -> int:
    """What a refund through this payment may give back now: what its
    purchase's account holds for the buyer (``ledger.domain.refundable``:
    never a ticket sent on, resold or taken back by the bank), and never
    more than this payment's own transaction still has at the gateway."""
    balance = purchase_balance(Claim.objects.get(pk=payment.claim_id))
    return min(refundable(balance), transaction_left(payment))


def transaction_left(payment: Payment) -> int:
    """What the gateway still holds of this payment's transaction: what it
    took, less every refund of it not failed (ours and any made outside)."""
    taken = payment.paid_amount if payment.paid_amount is not None else payment.amount
    asked = (
        Refund.objects.filter(payment=payment)
        .exclude(status=R.FAILED)
        .aggregate(total=Sum("amount"))["total"]
    )
    return max(0, taken - (asked or 0))


def payment_refund(
    *,
    payment_id: uuid.UUID,
    actor: str,
    reason: str,
    amount: int | None = None,
    staff_action: bool = False,
) -> Refund:
    """Refund a payment (all that is left when ``amount`` is None) and ask
    the gateway at once. Raises InvalidTransition (not refundable now) or
    InvalidInput (a wrong amount); the gateway's own trouble is recorded on
    the refund, never raised. ``staff_action`` logs the request as one."""
    refund = refund_open(
        payment_id=payment_id, actor=actor, reason=reason, amount=amount, staff_action=staff_action
    )
    refund_send(refund_id=refund.pk, actor=actor)
    refund.refresh_from_db()
    return refund


def refund_open(
    *,
    payment_id: uuid.UUID,
    actor: str,
    reason: str,
    amount: int | None = None,
    staff_action: bool = False,
) -> Refund:
    """Step 1, one short transaction: the Refund row, the payment to
    REFUND_PENDING, and (for a CONFIRMED payment) its claim released."""
    with transaction.atomic():
        payment = payment_lock(payment_id=payment_id)
        if staff_action:
            payment_log(
                payment=payment,
                kind=EventKind.STAFF_ACTION,
                actor=actor,
                data={"action": "refund", "amount": amount, "reason": reason},
            )
        return refund_open_locked(
            payment=payment,
            actor=actor,
            reason=reason,
            amount=amount,
        )


def refund_open_locked(
    *,
    payment: Payment,
    actor: str,
    reason: str,
    amount: int | None,
    for_resale: bool = False,
) -> Refund:
    """``refund_open`` inside the caller's transaction, the payment locked.
    What may be refunded is read from the purchase's account under its
    claim's row lock (taken here, after the payment's): a transfer, a
    return or a resale of its tickets waits, or went first.

    ``for_resale``: what a resale owes the buyer goes back; the payment
    stays as it is and its purchase keeps its other tickets."""
    allowed = PAID_STATUSES if for_resale else REFUNDABLE_STATUSES
    if payment.status not in allowed:
        raise InvalidTransition(
            f"This payment cannot be refunded: it is {payment.status}.",
            details={"status": payment.status},
        )
    if (
        Refund.objects.filter(payment=payment, status__in=OPEN_REFUND_STATUSES)
        .exclude(requested_by=GATEWAY)
        .exists()
    ):
        raise InvalidTransition(
            "A refund of this payment is still with the gateway: try again once it has settled.",
            details={"status": payment.status},
        )
    claim = claim_lock(claim_id=payment.claim_id)
    left = transaction_left(payment)
    balance = purchase_balance(claim)
    allowance = min(resale_owed(balance) if for_resale else refundable(balance), left)
    problem = refund_amount_error(requested=amount, refundable=allowance)
    if problem:
        raise InvalidInput(f"Refund refused: {problem}.", details={"refundable": allowance})
    value = allowance if amount is None else amount
    currency = payment.paid_currency or payment.currency
    # Only the payment that paid for the purchase cancels it (a second
    # charge for a purchase another payment paid leaves it be).
    cancels = (
        not for_resale and payment.status == P.CONFIRMED and claim.status == ClaimStatus.CONFIRMED
    )
    refund = Refund.objects.create(
        payment=payment,
        amount=value,
        currency=currency,
        # No amount sent: the gateway gives back all it holds of the
        # transaction, which is this only when the bank took none of it.
        full=not for_resale and value == left and not balance[Bucket.LOST],
        for_resale=for_resale,
        reason=reason[:300],
        requested_by=actor[:150],
        next_check_at=timezone.now() + timedelta(seconds=lease_seconds()),
    )
    purchase_post(
        claim,
        refund_moves(
            balance, refund_id=str(refund.pk), amount=value, cancels=cancels, for_resale=for_resale
        ),
        actor=actor,
        payment_id=payment.pk,
        note=reason,
    )
    payment_log(
        payment=payment,
        kind=EventKind.REFUND_REQUESTED,
        actor=actor,
        data={
            "refund_id": str(refund.pk),
            "amount": refund.amount,
            "currency": currency,
            "full": refund.full,
            "for_resale": for_resale,
            "reason": reason,
        },
    )
    if for_resale:
        return refund
    if not payment_transition(
        payment=payment,
        target=P.REFUND_PENDING,
        actor=actor,
        reason=f"refund of {money_format(refund.amount, currency)}: {reason}"[:300],
        data={"refund_id": str(refund.pk)},
    ):
        # Only reachable without the row lock: someone else moved it first.
        raise InvalidTransition("The payment changed meanwhile; look again.")
    if cancels:
        # The purchase is cancelled: its tickets go back on sale now (and any
        # ticket issued for it is voided with the claim), not when the money lands.
        claim_release(claim_id=claim.pk, reason=ReleaseReason.REFUNDED)
    if payment.dispute in DISPUTE_NEEDS_STAFF:
        dispute_mark(payment=payment, state=DisputeState.CLOSED, actor=actor, data={"by": "refund"})
    return refund


def refund_outside_record(
    *, payment: Payment, gateway_refund_id: str, amount: int | None, gateway_status: str
) -> Refund | None:
    """A refund we did not ask for (made in the gateway's dashboard), named by
    the gateway's id: recorded as its own refund and its own entries in the
    purchase's account, never as one of ours. Like any refund it cancels a
    purchase that still holds its tickets (what it held beyond the refund
    stays refundable). Runs under the payment's row lock; a failed refund we
    never knew of moves nothing (None)."""
    if refund_status_of(gateway_status) == R.FAILED:
        logger.warning(
            "a refund of %s made outside FairQueue failed (%s): nothing moved",
            payment.reference,
            gateway_refund_id,
        )
        return None
    claim = claim_lock(claim_id=payment.claim_id)
    balance = purchase_balance(claim)
    if amount is None:  # a full refund at the gateway: all it still holds
        amount = balance.taken - balance[Bucket.REFUNDED] - balance[Bucket.IN_FLIGHT]
    refund = Refund.objects.create(
        payment=payment,
        amount=max(amount, 1),
        currency=payment.paid_currency or payment.currency,
        full=False,
        reason="refund made outside FairQueue (the gateway's dashboard)",
        requested_by=GATEWAY,
        status=R.PENDING,
        gateway_refund_id=gateway_refund_id[:64],
        next_check_at=timezone.now() + timedelta(seconds=settings.PAYMENT_STALE_SECONDS),
    )
    purchase_post(
        claim,
        outside_refund_moves(refund_id=str(refund.pk), amount=refund.amount, settled=False),
        actor="gateway",
        payment_id=payment.pk,
        gateway_refund_id=refund.gateway_refund_id,
        note=refund.reason,
    )
    payment_log(
        payment=payment,
        kind=EventKind.REFUND_REQUESTED,
        actor="gateway",
        data={
            "refund_id": str(refund.pk),
            "gateway_refund_id": refund.gateway_refund_id,
            "amount": refund.amount,
            "outside": True,
        },
    )
    cancels = payment.status == P.CONFIRMED and claim.status == ClaimStatus.CONFIRMED
    if payment.status in (P.CONFIRMED, P.REFUND_REQUIRED, P.REFUND_FAILED):
        payment_transition(
            payment=payment,
            target=P.REFUND_PENDING,
            actor="gateway",
            reason=f"refund made outside FairQueue: {money_format(refund.amount, refund.currency)}",
            data={"refund_id": str(refund.pk)},
        )
    if cancels:
        claim_release(claim_id=claim.pk, reason=ReleaseReason.REFUNDED)
    return refund


def refund_send(*, refund_id: uuid.UUID, actor: str) -> str:
    """Step 2 and 3: ``POST /refund`` outside any transaction, then the
    answer recorded. Returns what happened."""
    refund = Refund.objects.select_related("payment").get(pk=refund_id)
    if refund.status != R.REQUESTED:
        return "skipped"
    payment = refund.payment
    # Our refund's id rides in the note: the gateway's copy of a refund whose
    # answer we lost is found by it (``refund_checks``), never by a guess.
    note = f"{refund_note_prefix(refund.pk)} for {payment.reference}: {refund.reason}"[:200]
    try:
        answer = PaystackClient().refund(
            reference=payment.reference,
            amount=None if refund.full else refund.amount,
            currency=refund.currency,
            merchant_note=note,
            customer_note=f"Refund for your ticket payment {payment.reference}",
        )
    except GatewayTransientError as exc:
        _log_error(refund, actor, exc, transient=True)
        # The request may have got through: reconciliation looks before
        # asking again.
        _next_check(refund.pk, max(settings.PAYMENT_STALE_SECONDS, exc.retry_after or 0))
        return "gateway_unavailable"
    except GatewayPermanentError as exc:
        _log_error(refund, actor, exc, transient=False)
        if exc.credentials_refused:
            gateway_incident_record(operation="refund", error=exc, reference=payment.reference)
            _next_check(refund.pk, settings.PAYMENT_STALE_SECONDS)
            return "blocked"
        with transaction.atomic():
            payment = payment_lock(payment_id=payment.pk)
            refund = refund_lock(refund_id=refund.pk)
            refund_apply(
                payment=payment,
                refund=refund,
                gateway_status="failed",
                actor="gateway",
                failure=exc.gateway_message,
            )
        return "failed"
    with transaction.atomic():
        payment = payment_lock(payment_id=payment.pk)
        refund = refund_lock(refund_id=refund.pk)
        payment_log(
            payment=payment,
            kind=EventKind.REFUND_ANSWER,
            actor="gateway",
            data={"refund_id": str(refund.pk), "answer": answer.raw},
        )
        refund_apply(
            payment=payment,
            refund=refund,
            gateway_status=answer.status,
            actor="gateway",
            gateway_refund_id=answer.refund_id,
        )
        gateway_incident_resolve(operation="refund")
    return refund.status.lower()


def refund_apply(
    *,
    payment: Payment,
    refund: Refund,
    gateway_status: str,
    actor: str,
    gateway_refund_id: str = "",
    amount: Any = None,
    failure: str = "",
) -> RefundStatus:
    """What the gateway says of a refund (its answer, a webhook, a look-up),
    applied to the locked refund and payment. A settled refund never moves
    again; a repeat changes nothing."""
    target = refund_status_of(gateway_status)
    fields: dict[str, Any] = {"gateway_status": gateway_status[:32], "updated_at": timezone.now()}
    if gateway_refund_id and not refund.gateway_refund_id:
        fields["gateway_refund_id"] = gateway_refund_id[:64]
    if refund.status not in OPEN_REFUND_STATUSES or target == refund.status:
        Refund.objects.filter(pk=refund.pk).update(**fields)
        return RefundStatus(refund.status)
    if target == R.PENDING:
        fields["next_check_at"] = timezone.now() + timedelta(seconds=settings.PAYMENT_STALE_SECONDS)
    else:
        fields["settled_at"] = timezone.now()
    if target == R.FAILED:
        fields["failure_reason"] = (failure or f"gateway says {gateway_status}")[:300]
    settled = refund.amount
    if target == R.PROCESSED and _is_amount(amount) and amount != refund.amount:
        logger.warning(
            "refund %s of %s: the gateway refunded %s, we asked for %s",
            refund.pk,
            payment.reference,
            amount,
            refund.amount,
        )
        settled = amount
        fields["amount"] = amount
    Refund.objects.filter(pk=refund.pk).update(status=target, **fields)
    if target in (R.PROCESSED, R.FAILED):
        claim = claim_lock(claim_id=payment.claim_id)
        purchase_post(
            claim,
            refund_end_moves(
                purchase_balance(claim),
                refund_id=str(refund.pk),
                settled=settled if target == R.PROCESSED else None,
            ),
            actor=actor,
            payment_id=payment.pk,
            gateway_refund_id=fields.get("gateway_refund_id", refund.gateway_refund_id),
        )
    source = refund.status
    refund.status = target
    for name, value in fields.items():
        setattr(refund, name, value)
    payment_log(
        payment=payment,
        kind=EventKind.REFUND_UPDATE,
        actor=actor,
        data={
            "refund_id": str(refund.pk),
            "gateway_refund_id": refund.gateway_refund_id,
            "from": source,
            "to": target.value,
            "gateway_status": gateway_status,
        },
    )
    if target == R.PROCESSED:
        Payment.objects.filter(pk=payment.pk).update(
            refunded_amount=F("refunded_amount") + refund.amount
        )
        payment.refunded_amount += refund.amount
        if refund.for_resale:  # the purchase and its payment stay as they are
            logger.info("resale refund of %s processed (%s)", payment.reference, refund.amount)
            return target
        payment_transition(
            payment=payment,
            target=P.REFUNDED,
            actor=actor,
            reason=f"refund processed: {money_format(refund.amount, refund.currency)}",
            data={"refund_id": str(refund.pk)},
        )
        logger.info("payment %s refunded (%s)", payment.reference, refund.amount)
    elif target == R.FAILED and (refund.for_resale or refund.requested_by == GATEWAY):
        logger.error(
            "resale refund of payment %s failed (%s): staff must settle it",
            payment.reference,
            fields["failure_reason"],
        )
    elif target == R.FAILED:
        payment_transition(
            payment=payment,
            target=P.REFUND_FAILED,
            actor=actor,
            reason=f"refund failed: {fields['failure_reason']}"[:300],
            data={"refund_id": str(refund.pk)},
        )
        logger.error(
            "refund of payment %s failed (%s): staff must retry or settle it",
            payment.reference,
            fields["failure_reason"],
        )
    return target


def _is_amount(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _log_error(refund: Refund, actor: str, exc: Exception, *, transient: bool) -> None:
    data: dict[str, Any] = {
        "refund_id": str(refund.pk),
        "transient": transient,
        "error": getattr(exc, "gateway_message", str(exc)),
        "http_status": getattr(exc, "status_code", None),
    }
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        data["answer"] = body
    payment_log(payment=refund.payment, kind=EventKind.REFUND_ERROR, actor=actor, data=data)


def _next_check(refund_id: uuid.UUID, after_seconds: float) -> None:
    Refund.objects.filter(pk=refund_id).update(
        next_check_at=timezone.now() + timedelta(seconds=after_seconds)
    )


def payment_refund_auto(*, payment_id: uuid.UUID) -> str:
    """The automatic refund of a REFUND_REQUIRED payment (PAYSTACK_AUTO_REFUND):
    all that the gateway took goes back. Idempotent: anything else is skipped."""
    if not settings.PAYSTACK_AUTO_REFUND:
        return "off"
    payment = Payment.objects.filter(pk=payment_id).first()
    if payment is None or payment.status != P.REFUND_REQUIRED:
        return "skipped"
    try:
        refund = payment_refund(
            payment_id=payment_id,
            actor="auto",
            reason=payment.flag_reason or "paid, but no tickets could be given for it",
        )
    except (InvalidTransition, InvalidInput):
        return "skipped"  # someone got there first, or nothing left to refund
    return f"refund:{refund.status.lower()}"
