"""Admission windows that lapsed: ADMITTED -> EXPIRED in Postgres first, then
out of Redis' admitted set, and each customer told. Only while the event's
admission clock runs (``clock.py``): a window the stopped clock keeps open
does not expire."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime

from django.db import connection
from django.utils import timezone

from queueing.domain import EndReason, QueueStatus
from queueing.models import QueueEntry
from queueing.pushes import send_expired
from queueing.services.clock import WINDOW_OPEN_SQL
from queueing.store import queue_store

logger = logging.getLogger(__name__)

_TABLE = QueueEntry._meta.db_table

# Lapsed windows only: not one the admission clock keeps open (clock.py).
_EXPIRE_SQL = f"""
UPDATE {_TABLE} SET status = %(expired)s, finished_at = %(now)s, end_reason = %(reason)s
WHERE event_id = %(event_id)s AND status = %(admitted)s AND admission_expires_at <= %(now)s
  AND NOT {WINDOW_OPEN_SQL}
RETURNING id, customer_id
"""  # noqa: S608


def admissions_expire(*, event_id: uuid.UUID | str, now: datetime | None = None) -> int:
    """ADMITTED past the window -> EXPIRED (Postgres), out of the admitted
    set (Redis), and each customer told. Their slots count as free again.
    A window the stopped admission clock keeps open does not expire."""
    customers = admissions_lapse(event_id=event_id, now=now)
    send_expired(event_id=event_id, customer_ids=customers, reason=EndReason.ADMISSION_WINDOW.value)
    return len(customers)


def admissions_lapse(*, event_id: uuid.UUID | str, now: datetime | None = None) -> list[str]:
    """``admissions_expire`` without telling anyone: the admission tick tells
    them in its one message to the sockets. Returns the customers."""
    now = now or timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            _EXPIRE_SQL,
            {
                "expired": QueueStatus.EXPIRED.value,
                "now": now,
                "reason": EndReason.ADMISSION_WINDOW.value,
                "event_id": event_id,
                "admitted": QueueStatus.ADMITTED.value,
            },
        )
        rows = cursor.fetchall()
    if not rows:
        return []
    customers = [str(customer_id) for _, customer_id in rows]
    queue_store().release_admitted(event_id=event_id, customer_ids=customers)
    logger.info("admissions expired event=%s count=%s", event_id, len(rows))
    return customers
