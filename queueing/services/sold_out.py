"""Admitted, and nothing left: a customer holding an admission from the
line when the event has no free ticket (more are admitted than tickets are
free when the organizer admits ahead of no-shows, or when others claimed
several tickets each) is told at once and put first on the waiting list, so
the next ticket that comes back is offered to them before anyone else.

The claims app asks for it, for one customer, when that customer's claim
finds none left (``410 sold_out``). For an event that admits ahead, every
admission tick of it while SOLD_OUT asks for everyone still admitted: those
admitted beyond the tickets learn it within a tick, whether or not they try.

Postgres first, Redis second: under the event's row lock (the lock the tick
and the waiting list's rounds take), and only while Postgres has no free
ticket, the admissions end (ADMITTED -> EXPIRED, ``sold_out``) in the same
transaction that puts their customers on the list; after the commit they
leave the admitted set and each is told. A claim racing this meets it at the
entry's row: either it completed first (and this skips it) or it finds the
admission ended and is refused as sold out (invariant 1 is the ticket rows'
as always: nothing here takes or frees a ticket)."""

from __future__ import annotations

import logging
import uuid

from django.db import connection, transaction
from django.utils import timezone

from events.domain import LIVE_STATUSES as EVENT_LIVE_STATUSES
from events.models import Event
from fairqueue.errors import Busy
from fairqueue.locks import event_row_lock
from inventory.selectors import event_has_free_ticket
from queueing.domain import EndReason, QueueStatus
from queueing.models import QueueEntry
from queueing.pushes import send_expired
from queueing.services.waitlist import waitlist_first
from queueing.store import queue_store

logger = logging.getLogger(__name__)

_TABLE = QueueEntry._meta.db_table

# Admissions from the line only: a waiting-list offer stands for a ticket the
# list's round counted free, and its round withdraws it if that ticket is gone.
_END_SQL = f"""
UPDATE {_TABLE} SET status = %(expired)s, finished_at = %(now)s, end_reason = %(reason)s
WHERE event_id = %(event_id)s AND status = %(admitted)s AND offer_tier_id IS NULL
RETURNING customer_id, admitted_at, score
"""  # noqa: S608
_END_ONE_SQL = _END_SQL.replace(
    "AND offer_tier_id IS NULL", "AND offer_tier_id IS NULL AND customer_id = %(customer_id)s"
)


def admissions_sold_out(
    *, event_id: uuid.UUID | str, customer_id: uuid.UUID | str | None = None
) -> list[str]:
    """When the event has no free ticket left: the customer's admission from
    the line (every one, without ``customer_id``) ends (``sold_out``), its
    customer first on the waiting list (in the order they were admitted),
    out of the admitted set and told. Returns the customers. Cheap when
    there is nobody to move (one indexed lookup)."""
    pending = QueueEntry.objects.filter(
        event_id=event_id, status=QueueStatus.ADMITTED, offer_tier__isnull=True
    )
    if customer_id is not None:
        pending = pending.filter(customer_id=customer_id)
    if not pending.exists():
        return []
    try:
        return _end_and_list_first(event_id, customer_id)
    except Busy:
        # The event's row stayed locked past the lock timeout: the admissions
        # stand (the customer's next try, or the next tick of an event that
        # admits ahead, ends them); the caller's answer is "sold out" anyway.
        logger.info("sold out: admissions of event %s busy, left as they are", event_id)
        return []


def _end_and_list_first(
    event_id: uuid.UUID | str, customer_id: uuid.UUID | str | None
) -> list[str]:
    now = timezone.now()
    with transaction.atomic():
        event = event_row_lock(Event.objects.filter(pk=event_id), no_key=True)
        if event is None or event.status not in EVENT_LIVE_STATUSES:
            return []
        if event_has_free_ticket(event_id=event_id):
            return []
        with connection.cursor() as cursor:
            cursor.execute(
                _END_SQL if customer_id is None else _END_ONE_SQL,
                {
                    "expired": QueueStatus.EXPIRED.value,
                    "now": now,
                    "reason": EndReason.SOLD_OUT.value,
                    "event_id": event_id,
                    "admitted": QueueStatus.ADMITTED.value,
                    "customer_id": customer_id,
                },
            )
            rows = sorted(cursor.fetchall(), key=lambda r: (r[1] or now, r[2], str(r[0])))
        ended = [customer for customer, _, _ in rows]
        waitlist_first(event=event, customer_ids=ended, now=now)
    customers = [str(c) for c in ended]
    if customers:
        transaction.on_commit(lambda: _tell(event_id, customers))
        logger.info("admissions ended: sold out event=%s count=%s", event_id, len(customers))
    return customers


def _tell(event_id: uuid.UUID | str, customers: list[str]) -> None:
    queue_store().release_admitted(event_id=event_id, customer_ids=customers)
    send_expired(event_id=event_id, customer_ids=customers, reason=EndReason.SOLD_OUT.value)
