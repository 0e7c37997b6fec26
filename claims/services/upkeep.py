"""Periodic upkeep: expiring unpaid claims and healing the Redis counters.
Both are idempotent and safe with several workers; the Celery tasks add a
single-flight lock on top."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

import redis
from django.db import transaction
from django.db.models import Count, Exists, OuterRef, QuerySet
from django.utils import timezone

from claims.domain import ClaimStatus, ReleaseReason
from claims.models import Claim
from claims.services.release import claim_release, tickets_returned_on_commit
from events.domain import EventStatus
from events.inventory import inventory_sync_event
from events.models import Ticket
from events.selectors import events_live
from events.services import event_mark_available, event_mark_sold_out
from fairqueue.errors import InvalidTransition

logger = logging.getLogger(__name__)

EXPIRY_BATCH = 500
EXPIRY_MAX_BATCHES = 20


@dataclass
class ExpiryReport:
    released: int = 0  # unpaid claims released
    released_after_check: int = 0  # payment in flight, payments said it may go
    left_alone: int = 0  # payment in flight kept (pending, paid, or no answer)


def _payments_in_flight() -> QuerySet | None:
    """Live payments (INITIALIZING or PENDING); None while the payments app
    is not there (then no claim can have a payment)."""
    try:
        from payments.domain import LIVE_STATUSES
        from payments.models import Payment
    except ImportError:
        return None
    return Payment.objects.filter(status__in=[str(s) for s in LIVE_STATUSES])


def claims_expire(
    *,
    now: datetime | None = None,
    batch_size: int = EXPIRY_BATCH,
    max_batches: int = EXPIRY_MAX_BATCHES,
    time_budget_seconds: float = 20.0,
) -> ExpiryReport:
    """Release CLAIMED claims past ``expires_at`` (reason EXPIRED).

    Claims without a payment in flight go in batches, one transaction each,
    rows taken with ``FOR UPDATE SKIP LOCKED``. A claim with a payment in
    flight is never expired under it (invariant 5): payments checks with the
    gateway first, outside any transaction, and only a True answer releases
    it. Call this outside a transaction."""
    now = now or timezone.now()
    report = ExpiryReport()
    for _ in range(max_batches):
        looked_at, released = _expire_unpaid_batch(now=now, batch_size=batch_size)
        report.released += released
        if looked_at < batch_size:
            break
    _expire_after_payment_check(
        now=now, limit=batch_size, deadline=time.monotonic() + time_budget_seconds, report=report
    )
    if report.released or report.released_after_check or report.left_alone:
        logger.info("claims expiry %s", report)
    return report


def _expire_unpaid_batch(*, now: datetime, batch_size: int) -> tuple[int, int]:
    in_flight = _payments_in_flight()
    with transaction.atomic():
        due = Claim.objects.select_for_update(skip_locked=True).filter(
            status=ClaimStatus.CLAIMED, expires_at__lte=now
        )
        if in_flight is not None:
            due = due.exclude(Exists(in_flight.filter(claim_id=OuterRef("pk"))))
        rows = list(due.order_by("expires_at").values_list("id", "event_id")[:batch_size])
        ids = [claim_id for claim_id, _ in rows]
        if in_flight is not None and ids:
            # Checked again now that the rows are locked: a payment that
            # committed after the statement above started is visible here,
            # and one still being inserted waits for our lock.
            paying = set(in_flight.filter(claim_id__in=ids).values_list("claim_id", flat=True))
            ids = [claim_id for claim_id in ids if claim_id not in paying]
        if not ids:
            return len(rows), 0
        returned: dict[object, dict[object, int]] = defaultdict(dict)
        counts = (
            Ticket.objects.filter(claim_id__in=ids)
            .values_list("tier__event_id", "tier_id")
            .annotate(n=Count("id"))
        )
        for event_id, tier_id, n in counts:
            returned[event_id][tier_id] = n
        Claim.objects.filter(pk__in=ids, status=ClaimStatus.CLAIMED).update(
            status=ClaimStatus.RELEASED,
            released_at=timezone.now(),
            release_reason=ReleaseReason.EXPIRED.value,
        )
        Ticket.objects.filter(claim_id__in=ids).update(claim=None)
        for event_id in {event_id for _, event_id in rows}:
            tickets_returned_on_commit(event_id=event_id, returned=returned.get(event_id, {}))
    return len(rows), len(ids)


def _expire_after_payment_check(
    *, now: datetime, limit: int, deadline: float, report: ExpiryReport
) -> None:
    in_flight = _payments_in_flight()
    if in_flight is None:
        return
    ids = list(
        Claim.objects.filter(status=ClaimStatus.CLAIMED, expires_at__lte=now)
        .filter(Exists(in_flight.filter(claim_id=OuterRef("pk"))))
        .order_by("expires_at")
        .values_list("id", flat=True)[:limit]
    )
    if not ids:
        return
    try:
        from payments.services import payment_settle_before_expiry
    except ImportError:
        logger.warning(
            "%d expired claims have a payment in flight and payments cannot settle them "
            "yet: left alone",
            len(ids),
        )
        report.left_alone += len(ids)
        return
    for claim_id in ids:
        if time.monotonic() > deadline:
            report.left_alone += 1  # the next run goes on
            continue
        try:
            may_release = payment_settle_before_expiry(claim_id=claim_id)
        except Exception:  # one claim's gateway trouble must not stop the others
            logger.exception("payment check before expiry failed for claim %s", claim_id)
            may_release = False
        if not may_release:
            report.left_alone += 1
            continue
        try:
            claim_release(claim_id=claim_id, reason=ReleaseReason.EXPIRED)
            report.released_after_check += 1
        except InvalidTransition:
            report.left_alone += 1  # paid, or released by payments, meanwhile


@dataclass
class ReconcileReport:
    events: int = 0
    healed: list[tuple[str, str, int, int, int]] = field(default_factory=list)
    sold_out: list[str] = field(default_factory=list)
    back_on_sale: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def inventory_reconcile() -> ReconcileReport:
    """For every ACTIVE, PAUSED and SOLD_OUT event: each tier counter forced to
    Postgres truth minus reservations in flight (each heal logged with both
    numbers by ``inventory_sync_event``), and the event's SOLD_OUT / ACTIVE
    status flipped where Postgres disagrees with it."""
    report = ReconcileReport()
    for event_id, status in events_live().values_list("id", "status"):
        report.events += 1
        try:
            for heal in inventory_sync_event(event_id=event_id):
                report.healed.append((str(event_id), *heal))
        except redis.RedisError:
            logger.warning("inventory reconcile: redis unavailable for event %s", event_id)
            report.failed.append(str(event_id))
        if status == EventStatus.SOLD_OUT and event_mark_available(event_id=event_id):
            report.back_on_sale.append(str(event_id))
        elif status == EventStatus.ACTIVE and event_mark_sold_out(event_id=event_id):
            report.sold_out.append(str(event_id))
    return report
