"""The two primitive writes every payment service is made of: an entry in the
append-only event log, and a conditional state change (logged with it)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from claims.services import claim_payment_ended
from fairqueue.news import send_on_commit
from payments.domain import LIVE_STATUSES, PAYMENT_MACHINE, EventKind, PaymentStatus
from payments.models import Payment, PaymentEvent
from payments.signals import refund_required


def payment_log(
    *,
    payment: Payment,
    kind: EventKind,
    actor: str,
    data: dict[str, Any] | None = None,
    raw_body: str = "",
    from_status: str = "",
    to_status: str = "",
) -> PaymentEvent:
    return PaymentEvent.objects.create(
        payment=payment,
        kind=kind,
        actor=actor,
        data=data or {},
        raw_body=raw_body,
        from_status=from_status,
        to_status=to_status,
    )


def payment_transition(
    *,
    payment: Payment,
    target: PaymentStatus,
    actor: str,
    reason: str = "",
    data: dict[str, Any] | None = None,
    **fields: Any,
) -> bool:
    """``UPDATE ... WHERE status IN (states that may move to target)``; zero
    rows means someone else moved it first (an answer, not a crash). On
    success the change is logged and ``payment`` updated in memory. Callers
    hold the row lock, so the logged ``from_status`` is exact."""
    now = timezone.now()
    if target == PaymentStatus.CONFIRMED:
        fields.setdefault("confirmed_at", now)
    if target == PaymentStatus.FAILED:
        fields.setdefault("failed_at", now)
    updated = Payment.objects.filter(
        pk=payment.pk, status__in=PAYMENT_MACHINE.sources_of(target)
    ).update(status=target, updated_at=now, **fields)
    if not updated:
        return False
    source = payment.status
    if source in LIVE_STATUSES and target not in LIVE_STATUSES:
        claim_payment_ended(claim_id=payment.claim_id)
    payment_log(
        payment=payment,
        kind=EventKind.STATE_CHANGE,
        actor=actor,
        from_status=source,
        to_status=target,
        data={"reason": reason, **(data or {})} if reason or data else {},
    )
    payment.status = target
    for name, value in fields.items():
        setattr(payment, name, value)
    if target == PaymentStatus.REFUND_REQUIRED:
        # The automatic refund (payments/receivers.py) follows the commit.
        send_on_commit(refund_required, sender=Payment, payment_id=payment.pk)
    return True


def first_check_seconds() -> float:
    """When reconciliation first asks the gateway about a PENDING payment:
    one reconciliation interval after it started (a card declined at once is
    found then, without any webhook: Paystack sends none for a decline),
    then on the backoff from PAYMENT_STALE_SECONDS."""
    return float(min(settings.PAYMENT_STALE_SECONDS, settings.RECONCILE_INTERVAL_SECONDS))


def lease_seconds() -> int:
    """How long a worker may hold a payment while it talks to the gateway:
    longer than the client's whole bounded call."""
    return int(2 * settings.PAYSTACK_TIMEOUT_SECONDS) + 30


def payment_lease_take(*, payment_id: uuid.UUID, now: datetime | None = None) -> bool:
    """Take the right to call the gateway for a live payment whose lease has
    lapsed: one conditional UPDATE, so exactly one caller wins."""
    now = now or timezone.now()
    return bool(
        Payment.objects.filter(
            pk=payment_id,
            status__in=[PaymentStatus.INITIALIZING, PaymentStatus.PENDING],
            next_check_at__lte=now,
        ).update(
            next_check_at=now + timedelta(seconds=lease_seconds()),
            checks=F("checks") + 1,
            updated_at=now,
        )
    )


def payment_next_check(*, payment_id: uuid.UUID, after_seconds: float) -> None:
    Payment.objects.filter(pk=payment_id).update(
        next_check_at=timezone.now() + timedelta(seconds=after_seconds)
    )
