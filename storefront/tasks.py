"""Celery interface of the storefront (beat schedule: config/celery.py)."""

from __future__ import annotations

import smtplib
from typing import Any

from celery import shared_task

from fairqueue.locks import single_flight, time_limits
from storefront import services

SWEEP_LOCK_TTL = 240.0


# SMTP refusals and network errors are worth another try; a template bug is not.
EMAIL_RETRIES: dict[str, Any] = {
    "autoretry_for": (smtplib.SMTPException, OSError),
    "retry_backoff": 15,
    "retry_backoff_max": 900,
    "retry_jitter": True,
    "max_retries": 12,
}


@shared_task(name="storefront.tasks.confirmation_email_send", **EMAIL_RETRIES)
def confirmation_email_send(claim_id: str) -> str:
    return services.confirmation_email_deliver(claim_id=claim_id)


@shared_task(name="storefront.tasks.offer_email_send", **EMAIL_RETRIES)
def offer_email_send(event_id: str, customer_id: str, expires_at: str) -> str:
    return services.offer_email_deliver(
        event_id=event_id, customer_id=customer_id, expires_at=expires_at
    )


@shared_task(name="storefront.tasks.cancellation_email_send", **EMAIL_RETRIES)
def cancellation_email_send(claim_id: str, reason: str) -> str:
    return services.cancellation_email_deliver(claim_id=claim_id, reason=reason)


@shared_task(name="storefront.tasks.confirmation_emails_sweep", **time_limits(SWEEP_LOCK_TTL))
@single_flight("confirmation_emails_sweep", ttl_s=SWEEP_LOCK_TTL)
def confirmation_emails_sweep() -> int:
    """Enqueue the confirmations whose first enqueue was lost."""
    claim_ids = services.confirmations_unsent()
    for claim_id in claim_ids:
        confirmation_email_send.delay(str(claim_id))
    return len(claim_ids)


@shared_task(name="storefront.tasks.resold_email_send", **EMAIL_RETRIES)
def resold_email_send(return_id: str) -> str:
    return services.resold_email_deliver(return_id=return_id)


@shared_task(name="storefront.tasks.transfer_email_send", **EMAIL_RETRIES)
def transfer_email_send(transfer_id: str) -> str:
    return services.transfer_email_deliver(transfer_id=transfer_id)
