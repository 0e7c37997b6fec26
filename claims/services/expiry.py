"""Expiring claims nobody paid for in time. Idempotent and safe with several
workers; the Celery task adds a single-flight lock on top.

A claim with a payment in flight (``Claim.payment_in_flight``) is never
expired here (invariant 5): the payments app owns it, asks the gateway first
and releases it only when the payment has failed."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from claims.domain import ClaimStatus, ReleaseReason
from claims.models import Claim
from claims.services.release import tickets_returned_on_commit
from inventory.services import tickets_free

logger = logging.getLogger(__name__)

EXPIRY_BATCH = 500
EXPIRY_MAX_BATCHES = 20


@dataclass
class ExpiryReport:
    released: int = 0  # unpaid claims released


def claims_expire(
    *,
    now: datetime | None = None,
    batch_size: int = EXPIRY_BATCH,
    max_batches: int = EXPIRY_MAX_BATCHES,
) -> ExpiryReport:
    """Release CLAIMED claims past ``expires_at`` that have no payment in
    flight (reason EXPIRED), in batches, one transaction each, rows taken
    with ``FOR UPDATE SKIP LOCKED``. Call this outside a transaction."""
    now = now or timezone.now()
    report = ExpiryReport()
    for _ in range(max_batches):
        looked_at, released = _expire_unpaid_batch(now=now, batch_size=batch_size)
        report.released += released
        if looked_at < batch_size:
            break
    if report.released:
        logger.info("claims expiry %s", report)
    return report


def _expire_unpaid_batch(*, now: datetime, batch_size: int) -> tuple[int, int]:
    """One batch. A payment that starts on one of these claims locks its row
    (``claim_payment_started``): SKIP LOCKED passes it over, and one that
    committed first set ``payment_in_flight``, which the filter excludes."""
    with transaction.atomic():
        rows = list(
            Claim.objects.select_for_update(skip_locked=True)
            .filter(status=ClaimStatus.CLAIMED, expires_at__lte=now, payment_in_flight=False)
            .order_by("expires_at")
            .values_list("id", "event_id", "tier_id")[:batch_size]
        )
        ids = [claim_id for claim_id, _, _ in rows]
        if not ids:
            return 0, 0
        Claim.objects.filter(pk__in=ids, status=ClaimStatus.CLAIMED).update(
            status=ClaimStatus.RELEASED,
            released_at=timezone.now(),
            release_reason=ReleaseReason.EXPIRED.value,
        )
        freed = tickets_free(claim_ids=ids)
        tier_events = {tier_id: event_id for _, event_id, tier_id in rows}
        for event_id in set(tier_events.values()):
            tickets_returned_on_commit(
                event_id=event_id,
                returned={t: f for t, f in freed.items() if tier_events.get(t) == event_id},
            )
    return len(rows), len(ids)
