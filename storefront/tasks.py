"""Celery interface of the storefront (beat schedule: config/celery.py)."""

from __future__ import annotations

import smtplib
import uuid
from collections.abc import Callable
from typing import Any

from celery import Task, shared_task

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
def offer_email_send(entry_id: str) -> str:
    return services.offer_email_deliver(entry_id=entry_id)


@shared_task(name="storefront.tasks.cancellation_email_send", **EMAIL_RETRIES)
def cancellation_email_send(claim_id: str, reason: str) -> str:
    return services.cancellation_email_deliver(claim_id=claim_id, reason=reason)


@shared_task(name="storefront.tasks.return_email_send", **EMAIL_RETRIES)
def return_email_send(return_id: str) -> str:
    return services.return_email_deliver(return_id=return_id)


@shared_task(name="storefront.tasks.transfer_email_send", **EMAIL_RETRIES)
def transfer_email_send(transfer_id: str) -> str:
    return services.transfer_email_deliver(transfer_id=transfer_id)


# The emails sent at least once: each one's task, and the query of the rows
# whose email is still unsent a while after its news.
SWEPT: tuple[tuple[Task, Callable[[], list[uuid.UUID]]], ...] = (
    (confirmation_email_send, services.confirmations_unsent),
    (return_email_send, services.return_emails_unsent),
    (transfer_email_send, services.transfer_emails_unsent),
    (offer_email_send, services.offer_emails_unsent),
)


@shared_task(name="storefront.tasks.emails_sweep", **time_limits(SWEEP_LOCK_TTL))
@single_flight("emails_sweep", ttl_s=SWEEP_LOCK_TTL)
def emails_sweep() -> int:
    """Enqueue the emails whose first enqueue was lost. Returns how many."""
    enqueued = 0
    for task, unsent in SWEPT:
        for pk in unsent():
            task.delay(str(pk))
            enqueued += 1
    return enqueued
