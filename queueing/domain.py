"""Pure rules of a place in the waiting room (no Django)."""

from __future__ import annotations

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
