"""Pure rules of a place in the waiting room (no Django)."""

from __future__ import annotations

import math
from enum import StrEnum

from fairqueue.states import StateMachine


class QueueStatus(StrEnum):
    WAITING = "WAITING"
    ADMITTED = "ADMITTED"
    COMPLETED = "COMPLETED"  # claimed tickets
    ABANDONED = "ABANDONED"  # left the queue
    EXPIRED = "EXPIRED"  # admission window lapsed, or the sale ended


Q = QueueStatus
QUEUE_MACHINE = StateMachine(
    "queue_entry",
    {
        Q.WAITING: {Q.ADMITTED, Q.ABANDONED, Q.EXPIRED},
        Q.ADMITTED: {Q.COMPLETED, Q.EXPIRED},
    },
)

# At most one of these per (event, customer).
LIVE_STATUSES = (Q.WAITING, Q.ADMITTED)


class EndReason(StrEnum):
    """Why an entry is EXPIRED (the position endpoint and the push say so)."""

    ADMISSION_WINDOW = "admission_window"  # admitted, did not claim in time
    SALE_ENDED = "sale_ended"  # the organizer ended the sale, or its window closed


def admission_capacity(
    *, batch_size: int, max_active_admitted: int, admitted_now: int, free_tickets: int
) -> int:
    """How many to admit now: never more than the batch, never more admitted
    at once than the event allows, and never more than the tickets still free
    minus the customers already admitted who have not claimed yet."""
    return max(0, min(batch_size, max_active_admitted - admitted_now, free_tickets - admitted_now))


def eta_seconds(
    *, position: int, rate_per_second: float | None, wait_before_start: float = 0.0
) -> int | None:
    """Seconds until a customer at ``position`` (1-based) is admitted at the
    given admission rate; None when nobody is being admitted (rate 0)."""
    if rate_per_second is None or rate_per_second <= 0:
        return None
    return max(0, math.ceil(wait_before_start + position / rate_per_second))


# A customer without the live WebSocket asks again at least this often (so the
# page's place stays fresh) and, before the sale starts, spreads its first
# question after the start over up to PREQUEUE_SPREAD_SECONDS.
POLL_MAX_SECONDS = 120
PREQUEUE_SPREAD_SECONDS = 60


def poll_after_seconds(
    *, position: int, batch_size: int, interval: float, until_start: float, spread: float
) -> int:
    """When a customer at ``position`` (1-based) without the WebSocket should
    ask for its place again.

    No tick admits more than a batch, so a customer ``position`` places back
    cannot be admitted within the next ``ceil(position / batch) - 1`` ticks:
    it asks halfway to the earliest one (halfway: a tick can come early), and
    every tick once the next one may admit it, whatever the admission rate
    (when every ticket is held the rate is zero, yet the next returned ticket
    goes to the head of the line at the next tick). Before the sale starts
    the order is not drawn yet (the pre-queue is shuffled at the start): ask
    after the start, at ``spread`` (0..1, random per answer) of a window that
    grows with the place in the pre-queue, so the pre-queue does not ask in
    the same second."""
    ticks_ahead = (position - 1) // max(1, batch_size)
    after = min(float(POLL_MAX_SECONDS), max(interval, ticks_ahead * interval / 2))
    if until_start > 0:
        after = until_start + spread * min(float(PREQUEUE_SPREAD_SECONDS), after)
    return math.ceil(after)
