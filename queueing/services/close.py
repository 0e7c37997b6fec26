"""The end of a sale: everyone still in the line is expired."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import redis
from django.db import transaction
from django.utils import timezone

from queueing.domain import LIVE_STATUSES, QueueStatus
from queueing.models import QueueEntry
from queueing.pushes import send_expired
from queueing.store import queue_store

logger = logging.getLogger(__name__)


def queue_close(*, event_id: uuid.UUID | str) -> int:
    """Everyone still WAITING or ADMITTED becomes EXPIRED (the sale ended).
    Postgres first, then the Redis sets go. Returns how many entries closed."""
    now = timezone.now()
    with transaction.atomic():
        admitted = list(
            QueueEntry.objects.filter(event_id=event_id, status=QueueStatus.ADMITTED).values_list(
                "customer_id", flat=True
            )
        )
        closed = QueueEntry.objects.filter(event_id=event_id, status__in=LIVE_STATUSES).update(
            status=QueueStatus.EXPIRED, finished_at=now
        )
    try:
        queue_store().drop_event(event_id=event_id)
    except redis.RedisError:
        logger.warning("queue close: redis unavailable; reconciliation will drop the sets")
    send_expired(event_id=event_id, customer_ids=admitted, reason="sale_ended")
    logger.info("queue closed event=%s expired=%s", event_id, closed)
    return closed


def on_sale_ended(sender: Any, *, event_id: uuid.UUID | str, **kwargs: Any) -> None:
    """``events.signals.sale_ended`` receiver (connected in queueing/apps.py)."""
    queue_close(event_id=event_id)
