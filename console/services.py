"""Rebuild Redis from Postgres (invariant 2): on worker start and on demand."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from events.selectors import events_live
from inventory.services import inventory_sync_event
from queueing.services import queue_rebuild

logger = logging.getLogger(__name__)


def redis_rebuild(*, event_id: uuid.UUID | str | None = None) -> dict[str, dict[str, Any]]:
    """For every live event (or one): inventory counters to Postgres truth,
    waiting and admitted sets back where missing, in their exact order."""
    events = events_live()
    if event_id is not None:
        events = events.filter(pk=event_id)
    report: dict[str, dict[str, Any]] = {}
    for event in events:
        healed = inventory_sync_event(event_id=event.pk)
        queue = queue_rebuild(event_id=event.pk)
        report[str(event.pk)] = {"inventory_healed": len(healed), "queue": queue}
        logger.info("redis rebuilt event=%s %s", event.pk, report[str(event.pk)])
    return report
