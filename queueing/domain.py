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
