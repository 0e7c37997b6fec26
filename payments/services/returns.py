"""The customer is back from the gateway's checkout page: ask the gateway at
once instead of waiting for a webhook (a declined card never sends one)."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from payments.domain import PaymentStatus
from payments.models import Payment
from payments.paystack import GatewayTransientError
from payments.services.verify import payment_verify_and_apply

logger = logging.getLogger(__name__)


def payment_check_on_return(*, reference: str) -> Payment | None:
    """The payment with this reference, verified with the gateway first when
    it is PENDING (a success confirms it, a decline fails it: the claim stays
    held until its expiry, so the buyer may try again). At most one look per
    PAYMENT_RETURN_VERIFY_SECONDS per payment: the page refreshes itself
    while the payment is pending, and a reload must not become a stream of
    gateway calls."""
    payment = Payment.objects.filter(reference=reference).first()
    if payment is None or payment.status != PaymentStatus.PENDING:
        return payment
    now = timezone.now()
    recently = now - timedelta(seconds=settings.PAYMENT_RETURN_VERIFY_SECONDS)
    ours = Payment.objects.filter(
        Q(verified_at__isnull=True) | Q(verified_at__lte=recently),
        pk=payment.pk,
        status=PaymentStatus.PENDING,
    ).update(verified_at=now)
    if not ours:
        return payment
    try:
        payment_verify_and_apply(payment_id=payment.pk, actor="return", release_claim=False)
    except GatewayTransientError:
        logger.info("payment %s: the gateway did not answer on return", reference)
    return Payment.objects.filter(pk=payment.pk).first()
