"""The sale status follows the tickets: SOLD_OUT when none is free, ACTIVE
again when one comes back (invariant 4); and the periodic pass that heals
the Redis counters and any status that drifted."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field

import redis
from django.db import transaction
from django.utils import timezone

from events.domain import EventStatus
from events.models import Event
from events.selectors import events_live
from fairqueue.broadcast import event_group, push_after_commit
from inventory.selectors import event_has_free_ticket
from inventory.services import inventory_sync_event

logger = logging.getLogger(__name__)


def event_mark_sold_out(*, event_id: uuid.UUID | str) -> bool:
    """ACTIVE -> SOLD_OUT when no tier has a free ticket left in Postgres.
    Returns True when this call made the change."""
    with transaction.atomic():
        if event_has_free_ticket(event_id=event_id):
            return False
        updated = Event.objects.filter(pk=event_id, status=EventStatus.ACTIVE).update(
            status=EventStatus.SOLD_OUT, updated_at=timezone.now()
        )
        if updated:
            push_after_commit(
                event_group(event_id), {"type": "sold_out", "event_id": str(event_id)}
            )
    return bool(updated)


def event_mark_available(*, event_id: uuid.UUID | str) -> bool:
    """SOLD_OUT -> ACTIVE when tickets came back (invariant 4)."""
    with transaction.atomic():
        if not event_has_free_ticket(event_id=event_id):
            return False
        updated = Event.objects.filter(pk=event_id, status=EventStatus.SOLD_OUT).update(
            status=EventStatus.ACTIVE, updated_at=timezone.now()
        )
        if updated:
            push_after_commit(
                event_group(event_id), {"type": "available", "event_id": str(event_id)}
            )
    return bool(updated)


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
