"""The end of a sale: everyone still in the line is expired."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.db import connection
from django.utils import timezone

from queueing.domain import LIVE_STATUSES, EndReason, QueueStatus
from queueing.models import QueueEntry
from queueing.pushes import send_sale_ended
from queueing.store import queue_store

logger = logging.getLogger(__name__)

_CLOSE_SQL = f"""
UPDATE {QueueEntry._meta.db_table}
SET status = %(expired)s, finished_at = %(now)s, end_reason = %(reason)s
WHERE event_id = %(event_id)s AND status = ANY(%(live)s)
RETURNING customer_id
"""  # noqa: S608


def queue_close(*, event_id: uuid.UUID | str) -> int:
    """Everyone still WAITING or ADMITTED becomes EXPIRED with the reason
    ``sale_ended`` (one statement), then the Redis sets go and everyone on
    the event gets one ``expired`` push (``sale_ended``). A reconciliation
    that read the line before this committed does not bring it back: it
    drops the sets of an event that is no longer live after writing them
    (reconcile.py). Returns how many entries closed."""
    with connection.cursor() as cursor:
        cursor.execute(
            _CLOSE_SQL,
            {
                "expired": QueueStatus.EXPIRED.value,
                "now": timezone.now(),
                "reason": EndReason.SALE_ENDED.value,
                "event_id": event_id,
                "live": [s.value for s in LIVE_STATUSES],
            },
        )
        closed = [str(customer_id) for (customer_id,) in cursor.fetchall()]
    queue_store().drop_event(event_id=event_id)
    send_sale_ended(event_id=event_id)
    logger.info("queue closed event=%s expired=%s", event_id, len(closed))
    return len(closed)


def on_sale_ended(sender: Any, *, event_id: uuid.UUID | str, **kwargs: Any) -> None:
    """``events.signals.sale_ended`` receiver (connected in queueing/apps.py)."""
    queue_close(event_id=event_id)
