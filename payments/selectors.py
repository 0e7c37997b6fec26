"""Reads of payments that need care."""

from __future__ import annotations

import uuid

from django.db.models import Q, QuerySet

from fairqueue.errors import ErrorCode, NotFound
from payments.attention import attention_filters
from payments.domain import LIVE_STATUSES, REFUNDABLE_STATUSES, PaymentStatus
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


def payments_to_refund(*, claim_ids: list[uuid.UUID]) -> dict[uuid.UUID, Payment]:
    """The payment each order is refunded through: the one that paid it
    (CONFIRMED), else one whose money is still the buyer's to get back
    (REFUND_REQUIRED, REFUND_FAILED), else its latest (which says why it
    cannot be). Orders with no payment are left out."""

    def rank(payment: Payment) -> tuple[int, float]:
        if payment.status == PaymentStatus.CONFIRMED:
            first = 0
        elif payment.status in REFUNDABLE_STATUSES:
            first = 1
        else:
            first = 2
        return first, -payment.created_at.timestamp()

    chosen: dict[uuid.UUID, Payment] = {}
    for payment in Payment.objects.filter(claim_id__in=claim_ids).select_related("claim"):
        best = chosen.get(payment.claim_id)
        if best is None or rank(payment) < rank(best):
            chosen[payment.claim_id] = payment
    return chosen


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
