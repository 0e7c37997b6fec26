"""What the gateway's answers do to a payment and its claim.

Every function here runs inside the caller's short transaction, with the
payment row locked (``payment_lock``): the payment and the claim change
together or not at all.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.db import DEFAULT_DB_ALIAS
from django.utils import timezone

from claims.domain import ClaimStatus, ReleaseReason
from claims.models import Claim
from claims.services import claim_confirm, claim_lock, claim_reinstate, claim_release
from fairqueue.locks import locked_row, payment_row_lock_sql, refund_row_lock
from payments.domain import (
    LIVE_STATUSES,
    SETTLED_STATUSES,
    DisputeState,
    EventKind,
    PaymentStatus,
    VerifyOutcome,
    mismatch_reason,
    verify_outcome,
)
from payments.models import Payment, Refund
from payments.paystack import VerifyAnswer
from payments.services.disputes import dispute_mark
from payments.services.records import payment_log, payment_transition

logger = logging.getLogger(__name__)

P = PaymentStatus


_PAYMENT_FIELDS = [f.attname for f in Payment._meta.concrete_fields]


def _payment_lock_sql(where: str) -> str:
    """The payment row (every column) locked: written once (every payment
    step and webhook takes it), not compiled per call."""
    columns = ", ".join(f'p."{f.column}"' for f in Payment._meta.concrete_fields)
    return payment_row_lock_sql(
        f"SELECT {columns} FROM {Payment._meta.db_table} p WHERE {where}",  # noqa: S608
        alias="p",
    )


_PAYMENT_LOCK_SQL = _payment_lock_sql("p.id = %s")
_PAYMENT_BY_REFERENCE_LOCK_SQL = _payment_lock_sql("p.reference = %s")


def payment_lock(*, payment_id: uuid.UUID | str) -> Payment:
    """The payment row, locked until the caller's transaction ends (a wait
    past the lock timeout is 503 busy)."""
    row = locked_row(_PAYMENT_LOCK_SQL, [payment_id])
    if row is None:
        raise Payment.DoesNotExist(f"no payment {payment_id}")
    return Payment.from_db(DEFAULT_DB_ALIAS, _PAYMENT_FIELDS, row)


def payment_lock_by_reference(*, reference: str) -> Payment | None:
    """``payment_lock`` by the payment's gateway reference; None when no
    payment has it."""
    row = locked_row(_PAYMENT_BY_REFERENCE_LOCK_SQL, [reference])
    return None if row is None else Payment.from_db(DEFAULT_DB_ALIAS, _PAYMENT_FIELDS, row)


def refund_lock(*, refund_id: uuid.UUID | str) -> Refund:
    """A refund's row, under its payment's (the caller locked that first)."""
    refund = refund_row_lock(Refund.objects.filter(pk=refund_id))
    if refund is None:
        raise Refund.DoesNotExist(f"no refund {refund_id}")
    return refund


def apply_success(
    *,
    payment: Payment,
    amount: Any,
    currency: Any,
    transaction_id: str,
    actor: str,
) -> Payment:
    """The gateway says the customer paid. Confirm payment and claim; or, for
    a claim already released, re-instate it or mark the payment
    REFUND_REQUIRED (invariant 5). A wrong amount or currency is flagged and
    never kept (invariant 7): REFUND_REQUIRED, whatever the payment's state,
    and its claim is left as it is (a claim still held runs its course: the
    customer may pay again, or it expires)."""
    if payment.status in SETTLED_STATUSES:
        return payment  # already settled: a repeat is a no-op
    paid: dict[str, Any] = {
        "paid_amount": amount if isinstance(amount, int) else None,
        "paid_currency": str(currency or "")[:3].upper(),
        "gateway_transaction_id": transaction_id[:64],
        "gateway_status": "success",
    }
    reason = mismatch_reason(
        expected_amount=payment.amount,
        expected_currency=payment.currency,
        paid_amount=amount,
        paid_currency=currency,
    )
    if reason:
        # Money we did not ask for cannot pay for the tickets, and nobody may
        # keep it: flagged for staff to see, and on the refund path at once.
        if payment.flag_reason != reason:
            payment_log(
                payment=payment,
                kind=EventKind.FLAGGED,
                actor=actor,
                data={"reason": reason, "paid_amount": amount, "paid_currency": currency},
            )
            logger.warning("payment %s flagged: %s", payment.reference, reason)
        payment_transition(
            payment=payment,
            target=P.REFUND_REQUIRED,
            actor=actor,
            reason=f"paid a wrong amount or currency: {reason}"[:300],
            flag_reason=reason[:300],
            **paid,
        )
    else:
        _settle_paid(payment=payment, actor=actor, paid=paid)
    if payment.status == P.REFUND_REQUIRED:
        logger.warning("payment %s needs a refund", payment.reference)
    return payment


def _settle_paid(*, payment: Payment, actor: str, paid: dict[str, Any]) -> None:
    """The money is right: the claim decides whether it is kept."""
    claim = claim_lock(claim_id=payment.claim_id)
    if claim.status == ClaimStatus.CLAIMED:
        claim_confirm(claim_id=claim.pk, claim=claim)
        payment_transition(
            payment=payment,
            target=P.CONFIRMED,
            actor=actor,
            reason="paid",
            claim_settled=True,
            **paid,
        )
    elif claim.status == ClaimStatus.RELEASED:
        # Late success: the claim was released (expired, failed, given up).
        if claim_reinstate(claim_id=claim.pk):
            payment_transition(
                payment=payment,
                target=P.CONFIRMED,
                actor=actor,
                reason="late success: claim re-instated",
                **paid,
            )
        else:
            payment_transition(
                payment=payment,
                target=P.REFUND_REQUIRED,
                actor=actor,
                reason="late success: the tickets are gone",
                flag_reason="Paid after the claim was released; no tickets left to re-instate.",
                **paid,
            )
    else:  # CONFIRMED by another payment: this one is a second charge
        payment_transition(
            payment=payment,
            target=P.REFUND_REQUIRED,
            actor=actor,
            reason="claim already paid by another payment",
            flag_reason="Second payment for a claim that was already paid.",
            **paid,
        )


def apply_failure(
    *,
    payment: Payment,
    reason: str,
    actor: str,
    release_claim: bool,
    release_reason: ReleaseReason = ReleaseReason.PAYMENT_FAILED,
    gateway_status: str = "",
) -> Payment:
    """A live payment fails; its claim is released with it unless the caller
    releases it itself (claim expiry does)."""
    if payment.status not in LIVE_STATUSES:
        return payment
    fields: dict[str, Any] = {"failure_reason": reason[:300]}
    if gateway_status:
        fields["gateway_status"] = gateway_status[:32]
    if not payment_transition(
        payment=payment, target=P.FAILED, actor=actor, reason=reason, **fields
    ):
        return payment
    if release_claim:
        claim = claim_lock(claim_id=payment.claim_id)
        if claim.status == ClaimStatus.CLAIMED:
            claim_release(claim_id=claim.pk, reason=release_reason)
    return payment


def apply_verify(
    *,
    payment: Payment,
    answer: VerifyAnswer,
    actor: str,
    release_claim: bool,
) -> VerifyOutcome:
    """Apply a verify answer to a (locked) payment. ABANDONED is final only
    once the claim has expired or is gone: until then the customer may still
    be on the checkout page."""
    outcome = verify_outcome(answer.status)
    log_verify_result(payment=payment, answer=answer, actor=actor)
    if answer.reference and answer.reference != payment.reference:
        logger.error("verify for %s answered reference %s", payment.reference, answer.reference)
        return VerifyOutcome.IN_PROGRESS
    if outcome == VerifyOutcome.SUCCESS:
        apply_success(
            payment=payment,
            amount=answer.amount,
            currency=answer.currency,
            transaction_id=answer.transaction_id,
            actor=actor,
        )
        return outcome
    if outcome == VerifyOutcome.REVERSED and payment.status == P.CONFIRMED:
        # The customer's bank took the money back from a paid purchase: staff
        # decide on the tickets, exactly as for a dispute.
        Payment.objects.filter(pk=payment.pk).update(gateway_status=answer.status[:32])
        dispute_mark(
            payment=payment,
            state=DisputeState.REVERSED,
            actor=actor,
            data={"source": "verify", "gateway_status": answer.status},
        )
        return outcome
    if payment.status not in LIVE_STATUSES:
        return outcome  # nothing left to decide for a settled payment
    if outcome == VerifyOutcome.ABANDONED and not claim_over(payment):
        Payment.objects.filter(pk=payment.pk).update(gateway_status=answer.status[:32])
        return VerifyOutcome.IN_PROGRESS
    if outcome in (VerifyOutcome.FAILED, VerifyOutcome.ABANDONED, VerifyOutcome.REVERSED):
        apply_failure(
            payment=payment,
            reason=f"gateway says {answer.status}",
            actor=actor,
            release_claim=release_claim,
            gateway_status=answer.status,
        )
    else:
        Payment.objects.filter(pk=payment.pk).update(gateway_status=answer.status[:32])
    return outcome


def log_verify_result(*, payment: Payment, answer: VerifyAnswer, actor: str) -> None:
    payment_log(
        payment=payment,
        kind=EventKind.VERIFY_RESULT,
        actor=actor,
        data={"outcome": verify_outcome(answer.status).value, "answer": answer.raw},
    )


def claim_over(payment: Payment) -> bool:
    """The claim is no longer waiting for this payment: released, paid, or expired."""
    claim = Claim.objects.only("status", "expires_at").get(pk=payment.claim_id)
    return claim.status != ClaimStatus.CLAIMED or claim.expires_at <= timezone.now()
