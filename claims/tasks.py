"""Celery interface of the claims app (beat schedule: config/celery.py)."""

from __future__ import annotations

import dataclasses

from celery import shared_task
from django.conf import settings

from claims import services
from fairqueue.locks import single_flight, time_limits

EXPIRY_LOCK_TTL = max(60.0, 4 * settings.EXPIRY_INTERVAL_SECONDS)


@shared_task(name="claims.tasks.claims_expire", **time_limits(EXPIRY_LOCK_TTL))
@single_flight("claims_expire", ttl_s=EXPIRY_LOCK_TTL)
def claims_expire() -> dict:
    return dataclasses.asdict(services.claims_expire())


@shared_task(name="claims.tasks.returns_close", **time_limits(EXPIRY_LOCK_TTL))
@single_flight("returns_close", ttl_s=EXPIRY_LOCK_TTL)
def returns_close() -> dict:
    """Returns still on resale when their event's returns closed go back to
    their holders."""
    return dataclasses.asdict(services.returns_close_due())
