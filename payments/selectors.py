"""Reads of payments that need care."""

from __future__ import annotations

import uuid

from django.db.models import Q, QuerySet

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


def payments_needing_staff() -> QuerySet[Payment]:
    """Every payment one of the admin's "needs attention" filters lists."""
    condition = Q(pk__in=[])
    for _, q in attention_filters().values():
        condition |= q
    return Payment.objects.filter(condition)


def gateway_incidents_open() -> QuerySet[GatewayIncident]:
    """Merchant-side refusals still going on: ``failures`` counts them."""
    return GatewayIncident.objects.filter(resolved_at__isnull=True)


def payment_events(*, payment_id: uuid.UUID) -> QuerySet[PaymentEvent]:
    return PaymentEvent.objects.filter(payment_id=payment_id).order_by("created_at", "id")
