"""The sale status follows the tickets: SOLD_OUT when none is free, ACTIVE
again when one comes back (invariant 4); and the periodic pass that heals
the Redis counters and any status that drifted.

Both flips lock the event's row first (``FOR NO KEY UPDATE``, bounded by
``pg_lock_timeout``) and only then ask Postgres about free tickets, in a
statement that starts after the lock is ours. So "sold out" and "back on
sale" are serialised: a release that commits while "sold out" is being
decided either is seen by it, or runs its "back on sale" after it and finds
SOLD_OUT to undo. Without the lock, a check, a release
and its no-op "back on sale", then the flip, left SOLD_OUT with a free ticket.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from events.domain import EventStatus
from events.models import Event
from events.selectors import events_live
from fairqueue.broadcast import event_group, push_after_commit
from fairqueue.errors import Busy
from fairqueue.locks import event_row_lock
from inventory.selectors import event_has_free_ticket
from inventory.services import inventory_sync_event

logger = logging.getLogger(__name__)


def _locked_status(event_id: uuid.UUID | str) -> str | None:
    status: str | None = event_row_lock(
        Event.objects.filter(pk=event_id).values_list("status", flat=True), no_key=True
    )
    return status


def _flip(
    event_id: uuid.UUID | str, *, source: EventStatus, target: EventStatus, push: str
) -> None:
    Event.objects.filter(pk=event_id, status=source).update(
        status=target, updated_at=timezone.now()
    )
    push_after_commit(event_group(event_id), {"type": push, "event_id": str(event_id)})


def event_mark_sold_out(*, event_id: uuid.UUID | str) -> bool:
    """ACTIVE -> SOLD_OUT when no tier has a free ticket left in Postgres.
    Returns True when this call made the change. Busy when the event's row
    stays locked past the lock timeout."""
    with transaction.atomic():
        if _locked_status(event_id) != EventStatus.ACTIVE:
            return False
        if event_has_free_ticket(event_id=event_id):
            return False
        _flip(event_id, source=EventStatus.ACTIVE, target=EventStatus.SOLD_OUT, push="sold_out")
    return True


def event_mark_available(*, event_id: uuid.UUID | str) -> bool:
    """SOLD_OUT -> ACTIVE when tickets came back (invariant 4). Busy when
    the event's row stays locked past the lock timeout."""
    with transaction.atomic():
        if _locked_status(event_id) != EventStatus.SOLD_OUT:
            return False
        if not event_has_free_ticket(event_id=event_id):
            return False
        _flip(event_id, source=EventStatus.SOLD_OUT, target=EventStatus.ACTIVE, push="available")
    return True


@dataclass
class ReconcileReport:
    events: int = 0
    healed: list[tuple[str, str, int, int, int]] = field(default_factory=list)
    sold_out: list[str] = field(default_factory=list)
    back_on_sale: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # status left for the next pass (busy)


def inventory_reconcile() -> ReconcileReport:
    """For every ACTIVE, PAUSED and SOLD_OUT event: each tier counter forced to
    Postgres truth minus reservations in flight (each heal logged with both
    numbers by ``inventory_sync_event``; nothing while Redis is unreachable),
    and the event's SOLD_OUT / ACTIVE status flipped where Postgres disagrees
    with it (Postgres alone: this part runs through a Redis outage too)."""
    report = ReconcileReport()
    for event_id, status in events_live().values_list("id", "status"):
        report.events += 1
        for heal in inventory_sync_event(event_id=event_id):
            report.healed.append((str(event_id), *heal))
        try:
            if status == EventStatus.SOLD_OUT and event_mark_available(event_id=event_id):
                report.back_on_sale.append(str(event_id))
            elif status == EventStatus.ACTIVE and event_mark_sold_out(event_id=event_id):
                report.sold_out.append(str(event_id))
        except Busy:
            logger.warning("inventory reconcile: event %s busy; next pass", event_id)
            report.failed.append(str(event_id))
    return report
