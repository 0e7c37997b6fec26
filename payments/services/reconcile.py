"""Healing payments the happy path left behind, and the question claim
expiry asks before it releases a claim with a payment in flight. Refunds
have their own half (``payments.services.refund_checks``).

Workers take due rows with ``FOR UPDATE SKIP LOCKED`` in a short transaction
and push their ``next_check_at`` forward (a lease) before calling the
gateway outside any transaction, so several workers can run at once without
working on the same payment.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from claims.domain import ClaimStatus
from claims.models import Claim
from payments.domain import LIVE_STATUSES, EventKind, PaymentStatus, backoff_seconds
from payments.models import Payment
from payments.paystack import GatewayTransientError
from payments.services.initialize import payment_gateway_initialize
from payments.services.outcomes import claim_over, payment_lock
from payments.services.records import (
    lease_seconds,
    payment_lease_take,
    payment_log,
    payment_next_check,
)
from payments.services.refund_checks import refunds_reconcile
from payments.services.verify import payment_verify_and_apply

logger = logging.getLogger(__name__)

P = PaymentStatus


def _back_off(payment: Payment) -> None:
    payment_next_check(
        payment_id=payment.pk,
        after_seconds=backoff_seconds(base=settings.PAYMENT_STALE_SECONDS, checks=payment.checks),
    )


def payment_reconcile(*, payment_id: uuid.UUID) -> str:
    """Finish one live payment whose lease the caller holds: INITIALIZING ->
    initialize again with the same reference (unless its claim is over: then
    only ask the gateway what became of it); PENDING -> verify and apply."""
    payment = Payment.objects.select_related("claim").get(pk=payment_id)
    if payment.status not in LIVE_STATUSES:
        return "skipped"
    try:
        if payment.status == P.INITIALIZING and _claim_waits(payment):
            outcome = payment_gateway_initialize(payment=payment, actor="reconcile")
            return f"initialize:{outcome}"
        # A failed attempt keeps its claim: the buyer may try again until
        # the claim expires (expiry releases it then).
        result = payment_verify_and_apply(
            payment_id=payment_id, actor="reconcile", release_claim=False
        )
    except GatewayTransientError:
        _back_off(payment)
        return "gateway_unavailable"
    if Payment.objects.filter(pk=payment_id, status__in=LIVE_STATUSES).exists():
        _back_off(payment)  # still undecided (or the gateway would not say): look later
    return f"verify:{result}"


def _claim_waits(payment: Payment) -> bool:
    """Its claim still waits for this payment to start: not released, and not
    expired (a claim blocked by a merchant-side refusal waits past its expiry:
    it gets the time back)."""
    if payment.blocked_since is not None:
        return payment.claim.status == ClaimStatus.CLAIMED
    return not claim_over(payment)


def payments_due(*, limit: int, now: datetime | None = None) -> list[uuid.UUID]:
    """Take up to ``limit`` due live payments: lock them with SKIP LOCKED
    (rows another worker holds are passed over) and lease them."""
    now = now or timezone.now()
    with transaction.atomic():
        ids = list(
            Payment.objects.select_for_update(skip_locked=True)
            .filter(status__in=LIVE_STATUSES, next_check_at__lte=now)
            .order_by("next_check_at")
            .values_list("id", flat=True)[:limit]
        )
        if ids:
            Payment.objects.filter(pk__in=ids).update(
                next_check_at=now + timedelta(seconds=lease_seconds()),
                checks=F("checks") + 1,
            )
    return ids


def payments_reconcile(*, batch_size: int = 50, max_batches: int = 10) -> dict[str, int]:
    """The beat task's body (single-flight by its task lock), batched; rows
    are taken with SKIP LOCKED, so even two runs would not share a payment."""
    report: dict[str, int] = {}
    for _ in range(max_batches):
        ids = payments_due(limit=batch_size)
        for payment_id in ids:
            try:
                result = payment_reconcile(payment_id=payment_id)
            except Exception:  # one bad row must not stop the batch
                logger.exception("reconcile of payment %s failed", payment_id)
                result = "error"
            report[result] = report.get(result, 0) + 1
        if len(ids) < batch_size:
            break
    for result, count in refunds_reconcile(batch_size=batch_size).items():
        report[result] = report.get(result, 0) + count
    if report:
        logger.info("payments reconciled: %s", report)
    return report


def payment_settle_before_expiry(*, claim_id: uuid.UUID) -> bool:
    """Claim expiry asks before releasing a claim (invariant 5).

    True: the claim may be released now (no payment in flight, or the gateway
    says failed/abandoned and the payment was failed here, or the payment
    outlived PAYMENT_IN_PROGRESS_MAX_SECONDS in a non-final status; the caller
    releases the claim). False: leave it alone (the payment is pending within
    its bound, blocked by a merchant-side refusal within it, the gateway
    cannot be reached, or the payment has just been confirmed). Money of
    the wrong amount or currency does not keep the claim: that payment is
    on the refund path, and the claim may go."""
    if Payment.objects.filter(claim_id=claim_id, status=P.CONFIRMED).exists():
        return False
    payment = (
        Payment.objects.select_related("claim")
        .filter(claim_id=claim_id, status__in=LIVE_STATUSES)
        .first()
    )
    if payment is None:
        return True
    if payment.blocked_since is not None and not _past_bound(payment):
        # Our gateway account refused it: held while the outage lasts, up to
        # the same bound as a non-final status (a refusal that only this
        # payment meets must not hold the tickets for ever).
        return False
    if payment.status == P.INITIALIZING and not payment_lease_take(payment_id=payment.pk):
        return False  # a request or a worker is calling initialize right now
    try:
        result = payment_verify_and_apply(
            payment_id=payment.pk, actor="expiry", release_claim=False
        )
    except GatewayTransientError:
        return False
    if result in ("in_progress", "refused") and _overdue(payment):
        return True  # past the bound: the claim goes, the payment stays watched
    if Payment.objects.filter(claim_id=claim_id, status__in=[*LIVE_STATUSES, P.CONFIRMED]).exists():
        # Paid (confirmed now), still in progress, no answer, or something
        # moved it meanwhile (a webhook): not ours to release.
        return False
    # Failed, or paid with money that cannot be kept (on the refund path).
    return Claim.objects.filter(pk=claim_id, status=ClaimStatus.CLAIMED).exists()


def _overdue(payment: Payment) -> bool:
    """The written rule for non-final gateway statuses (ongoing, pending,
    processing, queued; docs/PAYMENTS.md): they may hold the claim's tickets
    past its expiry for PAYMENT_IN_PROGRESS_MAX_SECONDS. Past that, the
    payment is marked overdue (staff alerted) and the claim may be released;
    the payment stays PENDING and is still verified, so a late success takes
    the late-success path (re-instated, or refunded)."""
    if not _past_bound(payment):
        return False
    with transaction.atomic():
        locked = payment_lock(payment_id=payment.pk)
        if locked.status not in LIVE_STATUSES:
            return False
        if locked.overdue_at is None:
            Payment.objects.filter(pk=locked.pk).update(overdue_at=timezone.now())
            payment_log(
                payment=locked,
                kind=EventKind.OVERDUE,
                actor="expiry",
                data={
                    "gateway_status": locked.gateway_status,
                    "bound_seconds": settings.PAYMENT_IN_PROGRESS_MAX_SECONDS,
                    "claim_expired_at": payment.claim.expires_at.isoformat(),
                },
            )
            logger.error(
                "payment %s still %r %ds after its claim expired: claim released, "
                "payment kept under watch (staff: see 'overdue')",
                locked.reference,
                locked.gateway_status,
                settings.PAYMENT_IN_PROGRESS_MAX_SECONDS,
            )
    return True


def _past_bound(payment: Payment) -> bool:
    bound = timedelta(seconds=settings.PAYMENT_IN_PROGRESS_MAX_SECONDS)
    return payment.claim.expires_at + bound <= timezone.now()
