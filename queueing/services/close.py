"""The end of a sale: everyone still in the line is expired."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from django.db import connection
from django.utils import timezone

from events.domain import resale_after_sale
from events.models import Event
from queueing.domain import LIVE_STATUSES, EndReason, QueueStatus
from queueing.models import QueueEntry
from queueing.pushes import send_sale_ended
from queueing.store import queue_store

logger = logging.getLogger(__name__)

_CLOSE_SQL = f"""
UPDATE {QueueEntry._meta.db_table}
SET status = %(expired)s, finished_at = %(now)s, end_reason = %(reason)s
WHERE event_id = %(event_id)s AND status = ANY(%(live)s)
  AND NOT (%(keep_offers)s AND offer_tier_id IS NOT NULL)
RETURNING customer_id
"""  # noqa: S608


def offers_outlive_sale(event_id: uuid.UUID | str, now: datetime) -> bool:
    """Returns are open after the sale: the waiting list's offers stay (their
    tickets are returned ones, still resold), only the line closes."""
    event = Event.objects.filter(pk=event_id).only("status", "sale_end", "returns_until").first()
    return event is not None and resale_after_sale(
        status=event.status, now=now, sale_end=event.sale_end, returns_until=event.returns_until
    )


def queue_close(*, event_id: uuid.UUID | str) -> int:
    """Everyone still WAITING or ADMITTED becomes EXPIRED with the reason
    ``sale_ended`` (one statement), then the Redis sets go and everyone on
    the event gets one ``expired`` push (``sale_ended``). A reconciliation
    that read the line before this committed does not bring it back: it
    drops the sets of an event that is no longer live after writing them
    (reconcile.py). While returns are open after the sale, the waiting
    list's offers are not closed (``offers_outlive_sale``). Returns how many
    entries closed."""
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            _CLOSE_SQL,
            {
                "expired": QueueStatus.EXPIRED.value,
                "now": now,
                "keep_offers": offers_outlive_sale(event_id, now),
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
