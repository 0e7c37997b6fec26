"""How many the admission tick may admit now (``queueing.domain.
admission_capacity``), counted in Postgres under the event's row lock: the
batch, the event's cap on admissions at once, and the tickets still free
minus the customers admitted who have not claimed yet.

Admitting ahead of no-shows (the event's ``admit_ahead``, off by default):
a share of admissions lapse (a forgotten tab holds its slot for the whole
time to choose), so near the end of a sale, where the free tickets and not
the batch decide, the tick may let a few more customers hold an admission
than tickets are free: the measured share that lapse, at most
``ADMIT_AHEAD_MAX_PERCENT`` of the free tickets (``admit_ahead_count``).
Never while a waiting-list offer is open (its round counts the event's free
tickets against every admission). Nothing here can oversell: a claim takes
ticket rows with ``FOR UPDATE SKIP LOCKED`` (invariant 1), and whoever finds
none left is told at once and goes first on the waiting list
(``queueing.services.sold_out``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from events.domain import EventStatus
from events.models import Event
from inventory.selectors import event_free_tickets
from queueing.domain import QueueStatus, admission_capacity, admit_ahead_count
from queueing.models import QueueEntry
from queueing.selectors import admissions_ended, open_offers


@dataclass(frozen=True)
class Capacity:
    admit: int  # how many the tick admits now
    ahead: int = 0  # of which beyond the free tickets (admitting ahead of no-shows)


def admission_room(event: Event, now: datetime) -> Capacity:
    """None unless ACTIVE inside the sale window. Every ADMITTED entry holds a
    slot: the lapsed ones were just expired, and the ones a stopped admission
    clock keeps open still hold theirs."""
    if event.status != EventStatus.ACTIVE or not (event.sale_start <= now < event.sale_end):
        return Capacity(0)
    admitted_now = QueueEntry.objects.filter(event_id=event.pk, status=QueueStatus.ADMITTED).count()
    free = event_free_tickets(event_id=event.pk)
    limits = dict(
        batch_size=event.admission_batch_size,
        max_active_admitted=event.max_active_admitted,
        admitted_now=admitted_now,
        free_tickets=free,
    )
    admit = admission_capacity(**limits)
    by_tickets = free - admitted_now < min(
        event.admission_batch_size, event.max_active_admitted - admitted_now
    )
    ahead = _ahead(event, free=free) if by_tickets else 0
    if ahead == 0:
        return Capacity(admit)
    with_ahead = admission_capacity(**limits, ahead=ahead)
    return Capacity(with_ahead, max(0, admitted_now + with_ahead - free))


def _ahead(event: Event, *, free: int) -> int:
    """Admitted beyond the free tickets (asked only where the free tickets
    are what limits the tick: the end of a sale), for an event that wants
    it, never beside an open offer of the waiting list."""
    if not event.admit_ahead or free <= 0:
        return 0
    if open_offers(event_id=event.pk):
        return 0
    lapsed, claimed = admissions_ended(event_id=event.pk)
    return admit_ahead_count(free_tickets=free, lapsed=lapsed, claimed=claimed)
