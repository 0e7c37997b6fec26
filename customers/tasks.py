"""Celery tasks of the customers app (beat schedule: config/celery.py)."""

from __future__ import annotations

from celery import shared_task

from customers.housekeeping import records_purge
from fairqueue.locks import single_flight, time_limits

PURGE_LOCK_TTL = 3000.0


@shared_task(name="customers.tasks.records_purge", **time_limits(PURGE_LOCK_TTL))
@single_flight("records_purge", ttl_s=PURGE_LOCK_TTL)
def purge_old_records() -> dict[str, int]:
    """One-time codes, Idempotency-Key answers and sessions past retention."""
    return records_purge()
