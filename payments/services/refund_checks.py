"""Reconciliation of refunds: refunds still open are looked up at the gateway
(their webhooks may be lost), refunds whose request may never have reached it
are found or sent again, and REFUND_REQUIRED payments nobody refunded yet are
refunded (PAYSTACK_AUTO_REFUND). Rows are taken with ``FOR UPDATE SKIP
LOCKED`` and leased, as for payments."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from fairqueue.locks import refund_row_lock
from payments.domain import (
    OPEN_REFUND_STATUSES,
    EventKind,
    PaymentStatus,
    RefundStatus,
    backoff_seconds,
)
from payments.models import Payment, Refund
from payments.paystack import (
    GatewayPermanentError,
    GatewayTransientError,
    PaystackClient,
    RefundAnswer,
)
from payments.services.incidents import gateway_incident_record
from payments.services.outcomes import payment_lock, refund_lock
from payments.services.records import lease_seconds, payment_log
from payments.services.refunds import (
    GATEWAY,
    payment_refund_auto,
    refund_apply,
    refund_note_prefix,
    refund_outside_record,
    refund_send,
)
from payments.services.resale_refunds import resale_refund_open, resale_refunds_due

logger = logging.getLogger(__name__)


def refunds_due(*, limit: int, now: datetime | None = None) -> list[uuid.UUID]:
    """Take up to ``limit`` due open refunds (SKIP LOCKED, then leased)."""
    now = now or timezone.now()
    with transaction.atomic():
        ids = list(
            Refund.objects.select_for_update(skip_locked=True)
            .filter(status__in=OPEN_REFUND_STATUSES, next_check_at__lte=now)
            .order_by("next_check_at")
            .values_list("id", flat=True)[:limit]
        )
        if ids:
            Refund.objects.filter(pk__in=ids).update(
                next_check_at=now + timedelta(seconds=lease_seconds()), checks=F("checks") + 1
            )
    return ids


def refund_reconcile(*, refund_id: uuid.UUID) -> str:
    """One open refund whose lease the caller holds: ask the gateway where it
    is (``GET /refund/:id``; without an id, the transaction's refunds), and
    send a request that never got there."""
    refund = Refund.objects.select_related("payment").get(pk=refund_id)
    if refund.status not in OPEN_REFUND_STATUSES:
        return "skipped"
    payment = refund.payment
    client = PaystackClient()
    try:
        if refund.gateway_refund_id:
            answer: RefundAnswer | None = client.refund_fetch(
                refund_id=refund.gateway_refund_id, reference=payment.reference
            )
        else:
            answer = _unclaimed(refund, client.refunds_of(reference=payment.reference))
            if answer is None and refund.status == RefundStatus.REQUESTED:
                # The gateway has no refund of ours for it: the request never
                # arrived. Send it (now, for the first time or again).
                return f"refund_send:{refund_send(refund_id=refund.pk, actor='reconcile')}"
    except GatewayTransientError as exc:
        _back_off(refund, at_least=exc.retry_after or 0)
        return "refund_check:gateway_unavailable"
    except GatewayPermanentError as exc:
        payment_log(
            payment=payment,
            kind=EventKind.REFUND_ERROR,
            actor="reconcile",
            data={
                "refund_id": str(refund.pk),
                "transient": False,
                "error": exc.gateway_message,
                "http_status": exc.status_code,
            },
        )
        if exc.credentials_refused:
            gateway_incident_record(operation="refund", error=exc, reference=payment.reference)
        _back_off(refund)
        return "refund_check:refused"
    if answer is None:
        _back_off(refund)
        return "refund_check:unknown"
    with transaction.atomic():
        locked_payment = payment_lock(payment_id=payment.pk)
        locked = refund_lock(refund_id=refund.pk)
        status = refund_apply(
            payment=locked_payment,
            refund=locked,
            gateway_status=answer.status,
            actor="reconcile",
            gateway_refund_id=answer.refund_id,
            amount=answer.amount,
        )
    if status in OPEN_REFUND_STATUSES:
        _back_off(refund)
    return f"refund_check:{status.lower()}"


def _unclaimed(refund: Refund, answers: list[RefundAnswer]) -> RefundAnswer | None:
    """The gateway's refund for this transaction that is this one: its
    merchant note names our refund (``refund_send`` writes it there). Never
    a guess: a refund made in the gateway's dashboard names none of ours."""
    mark = refund_note_prefix(refund.pk)
    for answer in answers:
        if answer.refund_id and answer.merchant_note.startswith(mark):
            return answer
    return None


def payment_refunds_sync(*, payment_id: uuid.UUID | str) -> str:
    """The gateway's refunds of this payment's transaction, matched to ours:
    by the gateway's refund id, or for a request of ours whose answer never
    reached us by our refund's id in its merchant note; any other is a
    refund made outside FairQueue (the gateway's dashboard), recorded as its
    own. Asked when a refund event names no refund we know (Paystack's
    refund webhooks carry no refund id). The gateway is called outside any
    transaction; its answers are applied under the payment's row lock."""
    payment = Payment.objects.filter(pk=payment_id).first()
    if payment is None:
        return "skipped"
    try:
        answers = PaystackClient().refunds_of(reference=payment.reference)
    except (GatewayTransientError, GatewayPermanentError) as exc:
        logger.warning("refunds of %s could not be listed: %s", payment.reference, exc)
        Refund.objects.filter(payment=payment, status__in=OPEN_REFUND_STATUSES).update(
            next_check_at=timezone.now()
        )
        return "gateway_unavailable"
    applied = 0
    with transaction.atomic():
        payment = payment_lock(payment_id=payment.pk)
        for answer in answers:
            if not answer.refund_id:
                continue
            refund = _ours(payment, answer)
            if refund is None:
                refund = refund_outside_record(
                    payment=payment,
                    gateway_refund_id=answer.refund_id,
                    amount=answer.amount if isinstance(answer.amount, int) else None,
                    gateway_status=answer.status,
                )
            if refund is not None:
                refund_apply(
                    payment=payment,
                    refund=refund,
                    gateway_status=answer.status,
                    actor="reconcile",
                    gateway_refund_id=answer.refund_id,
                    amount=answer.amount,
                )
                applied += 1
    return f"synced:{applied}"


def _ours(payment: Payment, answer: RefundAnswer) -> Refund | None:
    """Our refund (locked) that this gateway refund is: the one with its id,
    or the one its merchant note names whose answer we never got."""
    refunds = Refund.objects.filter(payment=payment)
    refund = refund_row_lock(refunds.filter(gateway_refund_id=answer.refund_id))
    if refund is not None:
        return refund
    for candidate in refunds.filter(gateway_refund_id="").exclude(requested_by=GATEWAY):
        if answer.merchant_note.startswith(refund_note_prefix(candidate.pk)):
            return refund_lock(refund_id=candidate.pk)
    return None


def _back_off(refund: Refund, *, at_least: float = 0) -> None:
    after = max(
        at_least, backoff_seconds(base=settings.PAYMENT_STALE_SECONDS, checks=refund.checks)
    )
    Refund.objects.filter(pk=refund.pk).update(
        next_check_at=timezone.now() + timedelta(seconds=after)
    )


def refunds_required_due(*, limit: int) -> list[uuid.UUID]:
    """REFUND_REQUIRED payments with no refund open: the automatic refund's
    safety net (its task is enqueued when the payment gets there)."""
    open_refund = Refund.objects.filter(payment=OuterRef("pk"), status__in=OPEN_REFUND_STATUSES)
    return list(
        Payment.objects.filter(status=PaymentStatus.REFUND_REQUIRED)
        .exclude(Exists(open_refund))
        .order_by("updated_at")
        .values_list("id", flat=True)[:limit]
    )


def refunds_reconcile(*, batch_size: int = 50) -> dict[str, int]:
    """One pass: due open refunds, resold tickets' refunds not opened, then
    the automatic refunds not started."""
    report: dict[str, int] = {}

    def count(result: str) -> None:
        report[result] = report.get(result, 0) + 1

    for refund_id in refunds_due(limit=batch_size):
        try:
            count(refund_reconcile(refund_id=refund_id))
        except Exception:  # one bad row must not stop the others
            logger.exception("reconcile of refund %s failed", refund_id)
            count("refund_check:error")
    for return_id in resale_refunds_due(limit=batch_size):
        try:
            count(f"resale_{resale_refund_open(return_id=return_id)}")
        except Exception:
            logger.exception("refund of resold return %s failed", return_id)
            count("resale_refund:error")
    if settings.PAYSTACK_AUTO_REFUND:
        for payment_id in refunds_required_due(limit=batch_size):
            try:
                count(f"auto_{payment_refund_auto(payment_id=payment_id)}")
            except Exception:
                logger.exception("automatic refund of payment %s failed", payment_id)
                count("auto_refund:error")
    return report
