"""Asking the gateway about a transaction (``GET /transaction/verify/{ref}``),
with the request and the answer (or the error) in the payment's log."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from payments.domain import EventKind, PaymentStatus
from payments.models import Payment
from payments.paystack import (
    GatewayPermanentError,
    GatewayTransientError,
    PaystackClient,
    VerifyAnswer,
)
from payments.services.incidents import gateway_incident_record, gateway_incident_resolve
from payments.services.outcomes import apply_failure, apply_verify, payment_lock
from payments.services.records import payment_log


@dataclass(frozen=True)
class VerifyCall:
    answer: VerifyAnswer | None  # None: the gateway refused to tell (see not_found)
    not_found: bool = False  # the gateway has never seen the reference


def gateway_verify(*, payment: Payment, actor: str) -> VerifyCall:
    """Outside any transaction. Raises GatewayTransientError (logged) when the
    gateway did not answer; the answer itself is logged by whoever applies it."""
    payment_log(
        payment=payment,
        kind=EventKind.VERIFY_REQUESTED,
        actor=actor,
        data={"reference": payment.reference},
    )
    Payment.objects.filter(pk=payment.pk).update(verified_at=timezone.now())
    try:
        answer = PaystackClient().verify(reference=payment.reference)
    except GatewayTransientError as exc:
        payment_log(
            payment=payment,
            kind=EventKind.VERIFY_ERROR,
            actor=actor,
            data={
                "transient": True,
                "error": str(exc),
                "http_status": exc.status_code,
                "retry_after": exc.retry_after,
            },
        )
        raise
    except GatewayPermanentError as exc:
        payment_log(
            payment=payment,
            kind=EventKind.VERIFY_ERROR,
            actor=actor,
            data={
                "transient": False,
                "error": exc.gateway_message,
                "http_status": exc.status_code,
                "answer": exc.body if isinstance(exc.body, dict) else None,
            },
        )
        if exc.credentials_refused:
            gateway_incident_record(operation="verify", error=exc, reference=payment.reference)
            return VerifyCall(answer=None)
        return VerifyCall(answer=None, not_found=exc.reference_not_found)
    gateway_incident_resolve(operation="verify")
    return VerifyCall(answer=answer)


def payment_verify_and_apply(*, payment_id: uuid.UUID, actor: str, release_claim: bool) -> str:
    """Verify outside any transaction, then apply the answer in one short
    transaction with the payment locked. Returns what happened: a
    ``VerifyOutcome`` value, ``not_found`` (an INITIALIZING payment the
    gateway never saw: failed, nobody can have paid it) or ``refused`` (the
    gateway would not say). Raises GatewayTransientError."""
    payment = Payment.objects.get(pk=payment_id)
    call = gateway_verify(payment=payment, actor=actor)
    with transaction.atomic():
        payment = payment_lock(payment_id=payment_id)
        if call.answer is not None:
            return apply_verify(
                payment=payment, answer=call.answer, actor=actor, release_claim=release_claim
            ).value
        if call.not_found and payment.status == PaymentStatus.INITIALIZING:
            apply_failure(
                payment=payment,
                reason="the gateway never saw this payment",
                actor=actor,
                release_claim=release_claim,
            )
            return "not_found"
    return "refused"
