"""Reads of payments that need care."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from fairqueue.errors import ErrorCode, NotFound
from payments.attention import attention_filters
from payments.domain import LIVE_STATUSES
from payments.models import GatewayIncident, Payment, PaymentEvent


def payment_get_for_customer(*, payment_id: uuid.UUID, customer_id: uuid.UUID) -> Payment:
    """Another customer's payment is "not found", never "forbidden": its
    existence is not theirs to learn."""
    payment = Payment.objects.filter(pk=payment_id, customer_id=customer_id).first()
    if payment is None:
        raise NotFound("No such payment.", code=ErrorCode.PAYMENT_NOT_FOUND)
    return payment


def payment_by_reference(*, reference: str) -> Payment | None:
    return Payment.objects.select_related("claim__event").filter(reference=reference).first()


def payment_live_for_claim(*, claim_id: uuid.UUID) -> Payment | None:
    return Payment.objects.filter(claim_id=claim_id, status__in=LIVE_STATUSES).first()


def stuck_q(now=None) -> Q:
    """Live payments older than the stale threshold (what staff look at)."""
    now = now or timezone.now()
    return Q(
        status__in=LIVE_STATUSES,
        created_at__lte=now - timedelta(seconds=settings.PAYMENT_STALE_SECONDS),
    )


def payments_stuck() -> QuerySet[Payment]:
    return Payment.objects.filter(stuck_q())


def payments_needing_staff() -> QuerySet[Payment]:
    """Every payment one of the admin's "needs attention" filters lists."""
    condition = Q(pk__in=[])
    for _, q in attention_filters().values():
        condition |= q
    return Payment.objects.filter(condition)


def payments_needing_staff_counts() -> dict[str, int]:
    """How many payments each "needs attention" filter lists (for monitoring
    and dashboards)."""
    return {
        key: Payment.objects.filter(q).count() for key, (_, q) in attention_filters().items()
    }


def gateway_incidents_open() -> QuerySet[GatewayIncident]:
    """Merchant-side refusals still going on: ``failures`` counts them."""
    return GatewayIncident.objects.filter(resolved_at__isnull=True)


def payment_events(*, payment_id: uuid.UUID) -> QuerySet[PaymentEvent]:
    return PaymentEvent.objects.filter(payment_id=payment_id).order_by("created_at", "id")
