"""Celery interface of the claims app: beat runs both (fairqueue/celery.py).
Each run is single-flight; the services are idempotent anyway."""

from __future__ import annotations

import dataclasses

from celery import shared_task
from django.conf import settings

from claims import services
from claims.store import claim_store


def _lock_ttl_ms(interval_seconds: float) -> int:
    # Long enough to cover a slow run, short enough that a dead worker's
    # lock does not stop the next runs for long.
    return int(max(60.0, 4 * interval_seconds) * 1000)


@shared_task(name="claims.tasks.claims_expire")
def claims_expire() -> dict:
    interval = settings.EXPIRY_INTERVAL_SECONDS
    with claim_store().single_flight("claims_expire", ttl_ms=_lock_ttl_ms(interval)) as mine:
        if not mine:
            return {"skipped": "another run holds the lock"}
        report = services.claims_expire(time_budget_seconds=max(5.0, interval * 0.8))
    return dataclasses.asdict(report)


@shared_task(name="claims.tasks.inventory_reconcile")
def inventory_reconcile() -> dict:
    interval = settings.RECONCILE_INTERVAL_SECONDS
    with claim_store().single_flight("inventory_reconcile", ttl_ms=_lock_ttl_ms(interval)) as mine:
        if not mine:
            return {"skipped": "another run holds the lock"}
        report = services.inventory_reconcile()
    return dataclasses.asdict(report)
