"""Pure rules of the event lifecycle (no Django)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from fairqueue.states import StateMachine, choices


class EventStatus(StrEnum):
    DRAFT = "DRAFT"
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    SOLD_OUT = "SOLD_OUT"
    ENDED = "ENDED"


# The field's choices (labels included): the model and the OpenAPI enum name
# (SPECTACULAR_SETTINGS' ENUM_NAME_OVERRIDES) use this one list.
EVENT_STATUS_CHOICES = choices(EventStatus)


S = EventStatus
EVENT_MACHINE = StateMachine(
    "event",
    {
        S.DRAFT: {S.ACTIVE},
        S.ACTIVE: {S.PAUSED, S.SOLD_OUT, S.ENDED},
        S.PAUSED: {S.ACTIVE, S.ENDED},
        S.SOLD_OUT: {S.ACTIVE, S.ENDED},
    },
)

# Statuses in which the event is live: queue and Redis state must exist.
LIVE_STATUSES = (S.ACTIVE, S.PAUSED, S.SOLD_OUT)

# A tier's tickets are rows, made while its save waits: a stadium's worth at
# most, so that one admin request cannot hold a worker for minutes.
MAX_TIER_INVENTORY = 100_000
# An admitted customer's time to choose their tickets, by default (per event,
# ``Event.admission_window_seconds``); a claim then has its own time to pay
# (``CLAIM_TTL_SECONDS``).
CHOOSE_SECONDS_DEFAULT = 120

# Rows Postgres makes per second, rounded down from what bench/provision_bench.py
# measures on a small shared machine (about 60,000): the admin's estimate of
# how long a large tier takes to set up.
TICKETS_PROVISIONED_PER_SECOND = 50_000


def provisioning_seconds(inventory: int) -> float:
    """About how long making ``inventory`` ticket rows takes."""
    return inventory / TICKETS_PROVISIONED_PER_SECOND


def sale_window_errors(
    *,
    sale_start: datetime | None,
    sale_end: datetime | None,
    prequeue_opens_at: datetime | None,
) -> dict[str, str]:
    errors: dict[str, str] = {}
    if sale_start and sale_end and sale_end <= sale_start:
        errors["sale_end"] = "The sale must end after it starts."
    if prequeue_opens_at and sale_start and prequeue_opens_at >= sale_start:
        errors["prequeue_opens_at"] = "The pre-queue must open before the sale starts."
    return errors


def is_on_sale(*, status: str, now: datetime, sale_start: datetime, sale_end: datetime) -> bool:
    """Customers may claim (and normal joiners may queue) only inside the window."""
    return status in (S.ACTIVE, S.PAUSED, S.SOLD_OUT) and sale_start <= now < sale_end


def resale_after_sale(
    *, status: str, now: datetime, sale_end: datetime, returns_until: datetime | None
) -> bool:
    """The sale is over (ended, or its window closed) but returns are still
    open: returned tickets are resold to the event's waiting list until
    ``returns_until``, through its offers only."""
    over = status == S.ENDED or now >= sale_end
    return over and status != S.DRAFT and returns_until is not None and now < returns_until


def in_prequeue(
    *, status: str, now: datetime, prequeue_opens_at: datetime | None, sale_start: datetime
) -> bool:
    return (
        status in (S.ACTIVE, S.PAUSED)
        and prequeue_opens_at is not None
        and prequeue_opens_at <= now < sale_start
    )
