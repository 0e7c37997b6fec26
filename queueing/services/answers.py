"""What the line tells a waiting customer, whether they just joined or asked
for their place: the ETA and when to ask again, how many were served, and
the epoch of their number."""

from __future__ import annotations

import random

from django.conf import settings
from django.utils import timezone

from queueing.domain import eta_seconds, line_epoch, poll_after_seconds
from queueing.selectors import EventSnapshot, fallback_rate
from queueing.services.clock import admission_served


def waiting_eta(event: EventSnapshot, position: int, rate: float | None) -> tuple[int | None, int]:
    """A waiting customer's ETA and when to ask again without the socket."""
    wait = max(0.0, (event.sale_start - timezone.now()).total_seconds())
    if rate is None:
        rate = fallback_rate(batch_size=event.admission_batch_size)
    eta = eta_seconds(position=position, rate_per_second=rate, wait_before_start=wait)
    poll_after = poll_after_seconds(
        position=position,
        rate_per_second=rate,
        interval=settings.ADMISSION_INTERVAL_SECONDS,
        until_start=wait,
        spread=random.random(),
    )
    return eta, poll_after


def served_or_counted(event: EventSnapshot, served: int | None) -> int:
    """A waiting customer's served counter: Redis', or Postgres' when Redis
    has none (before an event's first tick, after a wipe): a page counts its
    place from it."""
    return served if served is not None else admission_served(event_id=event.id)


def postgres_epoch(event: EventSnapshot) -> int:
    """The epoch of scores read from Postgres (which holds the drawn ones
    from the draw's commit on)."""
    return line_epoch(prequeue_drawn=event.prequeue_shuffled_at is not None)
