"""The claim step's side of admission: using it up inside the claim's
transaction, and the admitted slot released after it. (The token itself is
read by ``queueing.tokens.admission_token_read``; whether the admission is
still good is checked by the claim statement.)"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.db import connection
from django.utils import timezone

from queueing.domain import QueueStatus
from queueing.models import QueueEntry
from queueing.services.clock import WINDOW_OPEN_SQL
from queueing.store import queue_store

logger = logging.getLogger(__name__)

_COMPLETE_SQL = f"""
UPDATE {QueueEntry._meta.db_table} SET status = %(completed)s, finished_at = %(now)s
WHERE id = %(id)s AND status = %(admitted)s AND {WINDOW_OPEN_SQL}
"""  # noqa: S608


def queue_entry_complete(*, entry_id: uuid.UUID | str) -> bool:
    """ADMITTED -> COMPLETED, only while the admission window is open (or kept
    open by the stopped admission clock). Call it inside the claim
    transaction: False means the admission is no longer valid and the claim
    must not be made."""
    params: dict[str, Any] = {
        "completed": QueueStatus.COMPLETED.value,
        "admitted": QueueStatus.ADMITTED.value,
        "now": timezone.now(),
        "id": entry_id,
    }
    with connection.cursor() as cursor:
        cursor.execute(_COMPLETE_SQL, params)
        return bool(cursor.rowcount == 1)


def admission_slot(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> tuple[str, str]:
    """The Redis sorted set and member of this customer's admission slot: a
    claim that committed removes it in the round trip that finishes its
    reservation (the same as ``admission_slot_release``, one call fewer)."""
    return queue_store().admitted_key(event_id), str(customer_id)


def admission_slot_release(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> None:
    """After the claim committed: the customer leaves the admitted set (best
    effort; the reconciliation drops members that are no longer ADMITTED)."""
    queue_store().release_admitted(event_id=event_id, customer_ids=[customer_id])
