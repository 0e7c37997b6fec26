"""Celery tasks: the interface of the beat schedule (config/celery.py).
Each run is single-flight; inside, each event is also locked on its own (the
tick and the reconciliation of one event never interleave)."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from fairqueue.locks import single_flight, time_limits
from queueing.services import admission_tick_all, queue_reconcile_all
from queueing.services.waitlist_offers import waitlist_tick_all, waitlist_tick_event

# Two ticks: a worker killed mid-tick stops admission for at most that long.
TICK_LOCK_TTL = max(10.0, 2 * settings.ADMISSION_INTERVAL_SECONDS)
RECONCILE_LOCK_TTL = max(120.0, 4 * settings.RECONCILE_INTERVAL_SECONDS)


@shared_task(
    name="queueing.tasks.admission_tick", ignore_result=True, **time_limits(TICK_LOCK_TTL)
)
@single_flight("admission_tick", ttl_s=TICK_LOCK_TTL)
def admission_tick() -> int:
    """Offer freed tickets to the waiting lists first (a sold-out event's
    returned tickets go to its list before its line), then expire lapsed
    admissions and admit the next batch of every live event. Returns how
    many customers were admitted from the lines."""
    waitlist_tick_all()
    return sum(report.admitted for report in admission_tick_all())


@shared_task(name="queueing.tasks.waitlist_offer", ignore_result=True, **time_limits(TICK_LOCK_TTL))
def waitlist_offer(event_id: str) -> int:
    """One offer round of one event's waiting list (tickets freed up).
    Returns how many were offered a ticket."""
    return len(waitlist_tick_event(event_id=event_id).offered)


@shared_task(
    name="queueing.tasks.queue_reconcile", ignore_result=True, **time_limits(RECONCILE_LOCK_TTL)
)
@single_flight("queue_reconcile", ttl_s=RECONCILE_LOCK_TTL)
def queue_reconcile() -> int:
    """Redis waiting/admitted sets back in line with Postgres. Returns how
    many events needed a repair."""
    reports = queue_reconcile_all()
    return sum(1 for r in reports.values() if any(v for k, v in r.items() if k != "skipped"))
