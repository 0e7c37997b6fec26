"""Celery tasks of the core app (beat schedule: fairqueue/celery.py)."""

from __future__ import annotations

from celery import shared_task

from fairqueue.core.housekeeping import records_purge


@shared_task(name="fairqueue.core.tasks.records_purge")
def purge_old_records() -> dict[str, int]:
    """One-time codes, Idempotency-Key answers and sessions past retention."""
    return records_purge()
