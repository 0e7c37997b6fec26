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
# page's place stays fresh); the first HEAD_PLACES of the line ask every tick
# even while nobody is admitted (the next returned ticket goes to them); before
# the sale starts, the first question after it is spread over up to
# PREQUEUE_SPREAD_SECONDS.
POLL_MAX_SECONDS = 120
HEAD_PLACES = 50
PREQUEUE_SPREAD_SECONDS = 60


def poll_after_seconds(
    *,
    position: int,
    rate_per_second: float,
    interval: float,
    until_start: float,
    spread: float,
) -> int:
    """When a customer at ``position`` (1-based) without the WebSocket should
    ask for its place again, at the measured admission rate.

    Every tick near the head of the line: the first HEAD_PLACES, and as far
    as the next two ticks are expected to reach. Further back, at the ETA
    (within one tick and POLL_MAX_SECONDS): the line cannot reach it sooner
    unless the rate rises, and asking more often would only load the server
    that is serving the head. Nobody admitted (every ticket held): the
    longest, but for the head. Before the sale starts the order is not drawn
    yet (the pre-queue is shuffled at the start): ask after the start, at
    ``spread`` (0..1, random per answer) of a window that grows with the
    place in the pre-queue, so the pre-queue does not ask in the same second."""
    rate = max(0.0, rate_per_second)
    reach = max(HEAD_PLACES, 2 * interval * rate)
    if position <= reach:
        after = interval
    elif rate > 0:
        after = min(float(POLL_MAX_SECONDS), max(interval, position / rate))
    else:
        after = float(POLL_MAX_SECONDS)
    if until_start > 0:
        after = until_start + spread * min(float(PREQUEUE_SPREAD_SECONDS), after)
    return math.ceil(after)
