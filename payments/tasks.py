"""Celery interface of payments (beat schedule: config/celery.py)."""

from __future__ import annotations

import dataclasses
import uuid

from celery import shared_task
from django.conf import settings

from fairqueue.locks import single_flight, time_limits
from payments import services

RECONCILE_LOCK_TTL = max(60.0, 4 * settings.RECONCILE_INTERVAL_SECONDS)
EXPIRY_LOCK_TTL = max(60.0, 4 * settings.EXPIRY_INTERVAL_SECONDS)


@shared_task(name="payments.tasks.payments_reconcile", **time_limits(RECONCILE_LOCK_TTL))
@single_flight("payments_reconcile", ttl_s=RECONCILE_LOCK_TTL)
def payments_reconcile() -> dict[str, int]:
    return services.payments_reconcile()


@shared_task(name="payments.tasks.paying_claims_expire", **time_limits(EXPIRY_LOCK_TTL))
@single_flight("paying_claims_expire", ttl_s=EXPIRY_LOCK_TTL)
def paying_claims_expire() -> dict:
    budget = max(5.0, settings.EXPIRY_INTERVAL_SECONDS * 0.8)
    return dataclasses.asdict(services.paying_claims_expire(time_budget_seconds=budget))


@shared_task(name="payments.tasks.payment_refund_auto")
def payment_refund_auto(payment_id: str) -> str:
    """Enqueued when a payment becomes REFUND_REQUIRED; reconciliation is
    the safety net when this never runs."""
    return services.payment_refund_auto(payment_id=uuid.UUID(payment_id))


@shared_task(name="payments.tasks.resale_refund_open")
def resale_refund_open(return_id: str) -> str:
    """Enqueued when a returned ticket is resold; refund reconciliation is
    the safety net when this never runs."""
    return services.resale_refund_open(return_id=uuid.UUID(return_id))


@shared_task(name="payments.tasks.payment_refunds_sync")
def payment_refunds_sync(payment_id: str) -> str:
    """Enqueued when a refund event names no refund we know."""
    return services.payment_refunds_sync(payment_id=uuid.UUID(payment_id))
