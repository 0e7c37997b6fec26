"""Celery tasks: the interface of the beat schedule (fairqueue/celery.py).
Each one is single-flight per event (a Redis lock) and idempotent."""

from __future__ import annotations

from celery import shared_task

from queueing.services import admission_tick_all, queue_reconcile_all


@shared_task(name="queueing.tasks.admission_tick", ignore_result=True)
def admission_tick() -> int:
    """Expire lapsed admissions and admit the next batch of every live event.
    Returns how many customers were admitted."""
    return sum(report.admitted for report in admission_tick_all())


@shared_task(name="queueing.tasks.queue_reconcile", ignore_result=True)
def queue_reconcile() -> int:
    """Redis waiting/admitted sets back in line with Postgres. Returns how
    many events needed a repair."""
    reports = queue_reconcile_all()
    return sum(1 for r in reports.values() if any(v for k, v in r.items() if k != "skipped"))
