"""Celery interface of the events app (beat schedule: config/celery.py)."""

from __future__ import annotations

import dataclasses

from celery import shared_task
from django.conf import settings

from events import services
from fairqueue.locks import single_flight, time_limits

# Long enough to cover a slow run, short enough that a dead worker's lock
# does not stop the next runs for long.
RECONCILE_LOCK_TTL = max(60.0, 4 * settings.RECONCILE_INTERVAL_SECONDS)


@shared_task(name="events.tasks.inventory_reconcile", **time_limits(RECONCILE_LOCK_TTL))
@single_flight("inventory_reconcile", ttl_s=RECONCILE_LOCK_TTL)
def inventory_reconcile() -> dict:
    return dataclasses.asdict(services.inventory_reconcile())


# The end of a sale's window is noticed within one admission interval.
SALES_END_LOCK_TTL = max(10.0, 2 * settings.ADMISSION_INTERVAL_SECONDS)


@shared_task(name="events.tasks.sales_end", **time_limits(SALES_END_LOCK_TTL))
@single_flight("sales_end", ttl_s=SALES_END_LOCK_TTL)
def sales_end() -> list[str]:
    """End every live event whose sale window has closed."""
    return services.events_end_due()
