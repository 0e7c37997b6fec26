"""One extension of the time to choose: an admitted customer who is warned
that their time runs out may ask for as long again, once per admission
(WCAG 2.2.1: the person can ask for more time before it is up).

Postgres first, Redis second: one conditional UPDATE moves the entry's
expiry and marks it extended only while it is ADMITTED, not extended yet and
its time still runs (or the stopped admission clock keeps it open); then the
admitted set gets the new expiry and the customer's sockets the new token.
Zero rows is an answer (extended already, or the admission is over), never
a crash."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import NoReturn

from django.db import connection
from django.utils import timezone

from events.models import Event
from fairqueue.errors import Conflict, ErrorCode, Forbidden, NotFound
from queueing.domain import QueueStatus
from queueing.models import QueueEntry
from queueing.selectors import admission_window_open, entry_live
from queueing.services.admission import admitted_tell
from queueing.services.clock import WINDOW_OPEN_SQL
from queueing.services.position import entry_admission_token
from queueing.store import queue_store

_TABLE = QueueEntry._meta.db_table

_EXTEND_SQL = f"""
UPDATE {_TABLE} SET extended_at = %(now)s,
    admission_expires_at = admission_expires_at + make_interval(secs => %(seconds)s)
WHERE event_id = %(event_id)s AND customer_id = %(customer_id)s AND status = %(admitted)s
  AND extended_at IS NULL AND {WINDOW_OPEN_SQL}
RETURNING id, admission_expires_at
"""  # noqa: S608


@dataclass(frozen=True)
class Extension:
    entry_id: uuid.UUID
    expires_at: datetime
    admission_token: str


def admission_extend(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> Extension:
    """The customer's admission gets the event's time to choose once more,
    counted from its current end. Answers the new expiry and a token that
    carries it; the customer's other tabs hear it as an ``admitted`` push.

    Errors: 404 event_not_found / not_in_queue; 409 already_extended (the one
    extension was used); 409 invalid_transition (still waiting, not
    admitted); 403 admission_expired (the time to choose is over)."""
    seconds = (
        Event.objects.filter(pk=event_id).values_list("admission_window_seconds", flat=True).first()
    )
    if seconds is None:
        raise NotFound("No such event.", code=ErrorCode.EVENT_NOT_FOUND)
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            _EXTEND_SQL,
            {
                "now": now,
                "seconds": seconds,
                "event_id": event_id,
                "customer_id": customer_id,
                "admitted": QueueStatus.ADMITTED.value,
            },
        )
        row = cursor.fetchone()
    if row is None:
        _refuse(event_id, customer_id, now)
    entry_id, expires_at = row
    queue_store().admitted_rescore(
        event_id=event_id, members=[(str(customer_id), int(expires_at.timestamp() * 1000))]
    )
    admitted_tell(event_id, [(entry_id, uuid.UUID(str(customer_id)), expires_at)])
    entry = QueueEntry.objects.get(pk=entry_id)
    return Extension(entry_id, expires_at, entry_admission_token(entry, expires_at))


def _refuse(event_id: uuid.UUID | str, customer_id: uuid.UUID | str, now: datetime) -> NoReturn:
    entry = entry_live(event_id=event_id, customer_id=customer_id)
    if entry is None:
        raise NotFound("You hold no admission for this event.", code=ErrorCode.NOT_IN_QUEUE)
    if entry.status == QueueStatus.WAITING:
        raise Conflict(
            "Only an admitted customer's time to choose can be extended.",
            code=ErrorCode.INVALID_TRANSITION,
        )
    if entry.extended_at is not None and admission_window_open(entry=entry, now=now):
        raise Conflict(
            "Your time to choose was extended already: it can be extended once.",
            code=ErrorCode.ALREADY_EXTENDED,
            details={"admission_expires_at": entry.admission_expires_at.isoformat()}
            if entry.admission_expires_at
            else {},
        )
    raise Forbidden("The admission has expired.", code=ErrorCode.ADMISSION_EXPIRED)
