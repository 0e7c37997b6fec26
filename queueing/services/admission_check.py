"""The claim step's side of admission: is this admission token still good,
and, inside the claim's transaction, using it up."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.utils import timezone

from fairqueue.errors import ErrorCode, Forbidden
from queueing.domain import QueueStatus
from queueing.models import QueueEntry
from queueing.selectors import admission_window_open
from queueing.services.clock import WINDOW_OPEN_SQL
from queueing.store import queue_store
from queueing.tokens import admission_token_read

logger = logging.getLogger(__name__)

_COMPLETE_SQL = f"""
UPDATE {QueueEntry._meta.db_table} SET status = %(completed)s, finished_at = %(now)s
WHERE id = %(id)s AND status = %(admitted)s AND {WINDOW_OPEN_SQL}
"""  # noqa: S608


def admission_verify(
    *, token: str, event_id: uuid.UUID | str, customer_id: uuid.UUID | str
) -> QueueEntry:
    """The admission token is genuine, for this event and customer, and its
    entry is still ADMITTED inside its window.

    Errors: 401 invalid_token (bad signature or format), 403 admission_invalid
    (another customer or event), 403 admission_expired (expired, revoked, not
    admitted). Redis' admitted set may say yes at once; anything else (an
    entry it does not know: wiped Redis, a token from an older admission, or
    a window Redis thinks is over, which the admission clock may have kept
    open or given back) is read from Postgres. The final word is
    ``queue_entry_complete`` inside the claim transaction, which only moves a
    still-valid ADMITTED entry."""
    admission = admission_token_read(token=token, event_id=event_id, customer_id=customer_id)
    now = timezone.now()
    until_ms = queue_store().admitted_until_ms(
        event_id=admission.event_id, customer_id=admission.customer_id
    )
    # The token expires with the admission, so an admitted-set score equal to
    # the token's expiry (to the second) is this very admission.
    if (
        until_ms is not None
        and abs(until_ms // 1000 - admission.expires_at.timestamp()) <= 1
        and until_ms > now.timestamp() * 1000
    ):
        # Built from the token and Redis, no database read: id, event_id,
        # customer_id, status and admission_expires_at are set, nothing else.
        known = QueueEntry(
            id=admission.queue_entry_id,
            event_id=admission.event_id,
            customer_id=admission.customer_id,
            status=QueueStatus.ADMITTED,
            admission_expires_at=datetime.fromtimestamp(until_ms / 1000, UTC),
        )
        known._state.adding, known._state.db = False, "default"
        return known
    entry = QueueEntry.objects.filter(
        pk=admission.queue_entry_id,
        event_id=admission.event_id,
        customer_id=admission.customer_id,
    ).first()
    if entry is None or not admission_window_open(entry=entry, now=now):
        raise Forbidden("The admission has expired.", code=ErrorCode.ADMISSION_EXPIRED)
    return entry


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
