"""The admission clock: an admission window runs out only while the waiting
room works.

While Redis is unreachable the waiting room is degraded: admission pushes do
not reach anyone (the channel layer is Redis too), and customers who wait for
theirs cannot act. When the beat's broker is that same Redis, no tick runs at
all. Neither must cost a customer their place. So each event has a clock
(``AdmissionState``):

- it **stops** when Redis is found unreachable: by the tick, or by a request
  that had to do without Redis (``admission_clock_stop``). While it is
  stopped, a window that was still open when it stopped stays open (the
  claim step, the position endpoint and the expiry all ask
  ``admission_window_open`` / the same SQL), and no admission expires;
- it has **stood still** when no tick ran for ``STALL_TICKS`` intervals;
- the first tick that finds Redis again (or that follows the stall) starts it
  again: every ADMITTED entry whose window was open when the clock stopped
  gets the time the clock stood still added to its window (an entry admitted
  meanwhile: the time from its admission), in whole seconds. The tick then
  re-scores the admitted set and pushes each customer their new window.

Once the sale has ended no tick runs for the event, yet the waiting list's
offers outlive it while returns are open: its round
(``waitlist_offers``) keeps the clock in the tick's place.

Lock order: the event's row (the tick holds it), then this row; the entries
after both (docs/CONCURRENCY.md).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from fairqueue.errors import Busy
from fairqueue.locks import admission_state_lock, pg_lock_timeout
from queueing.domain import QueueStatus
from queueing.models import AdmissionState, QueueEntry

logger = logging.getLogger(__name__)

# No tick for this many admission intervals: the clock stood still.
STALL_TICKS = 3

_QUEUE = QueueEntry._meta.db_table
_STATE = AdmissionState._meta.db_table

# Windows given back: each open one grows by the time the clock stood still
# while it was open (rounded up to whole seconds, as admission expiries are).
_GIVE_BACK_SQL = f"""
UPDATE {_QUEUE} SET admission_expires_at = admission_expires_at + make_interval(
    secs => ceil(extract(epoch from (%(end)s - GREATEST(%(start)s, admitted_at)))))
WHERE event_id = %(event_id)s AND status = %(admitted)s
  AND admission_expires_at > %(start)s AND admitted_at < %(end)s
RETURNING id, customer_id, admission_expires_at
"""  # noqa: S608

_ENSURE_SQL = f"""
INSERT INTO {_STATE} (event_id, served, frontier, last_tick_at, stopped_since)
SELECT %(event_id)s, count(*), max(score), NULL, NULL FROM {_QUEUE}
WHERE event_id = %(event_id)s AND admitted_at IS NOT NULL
ON CONFLICT (event_id) DO NOTHING
"""  # noqa: S608

# "The window of this entry is open": the condition the claim step's
# conditional UPDATE and the expiry use, next to the entry's own columns.
WINDOW_OPEN_SQL = f"""(
    {_QUEUE}.admission_expires_at > %(now)s
    OR {_QUEUE}.admission_expires_at > COALESCE(
        (SELECT s.stopped_since FROM {_STATE} s WHERE s.event_id = {_QUEUE}.event_id),
        'infinity'::timestamptz))"""  # noqa: S608


def admission_state_ensure(*, event_id: uuid.UUID | str) -> None:
    """The event's row, made once (``served`` counted from the entries)."""
    if not AdmissionState.objects.filter(event_id=event_id).exists():
        with connection.cursor() as cursor:
            cursor.execute(_ENSURE_SQL, {"event_id": event_id})


def admission_clock_stop(*, event_id: uuid.UUID | str, at: datetime | None = None) -> None:
    """Redis was found unreachable while serving this event: its admission
    clock stops (if it runs). Cheap enough for every degraded request: one
    conditional UPDATE, and a lookup when it matched nothing. Best effort:
    if a tick holds the row past the lock timeout, the tick itself has just
    looked at Redis and will stop the clock (or find Redis back)."""
    at = at or timezone.now()
    try:
        with transaction.atomic(), pg_lock_timeout():
            stopped = AdmissionState.objects.filter(
                event_id=event_id, stopped_since__isnull=True
            ).update(stopped_since=at)
            if not stopped and not AdmissionState.objects.filter(event_id=event_id).exists():
                admission_state_ensure(event_id=event_id)
                AdmissionState.objects.filter(event_id=event_id, stopped_since__isnull=True).update(
                    stopped_since=at
                )
    except Busy:
        logger.info("admission clock of event %s busy; the tick stops it", event_id)


@dataclass
class ClockAnswer:
    running: bool
    # (entry id, customer id, new admission expiry) of every window given back
    given_back: list[tuple[uuid.UUID, uuid.UUID, datetime]] = field(default_factory=list)
    stood_still_seconds: float = 0.0


def admission_clock_advance(
    *, event_id: uuid.UUID | str, now: datetime, redis_up: bool
) -> ClockAnswer:
    """The tick's step of the clock, inside the tick's transaction (which
    holds the event's row lock). Returns whether the clock runs (admissions
    may expire) and the windows it gave back."""
    if not connection.in_atomic_block:
        raise RuntimeError("admission_clock_advance runs inside the tick's transaction")
    admission_state_ensure(event_id=event_id)
    state = admission_state_lock(AdmissionState.objects.filter(event_id=event_id))
    assert state is not None  # ensured just above
    interval = timedelta(seconds=settings.ADMISSION_INTERVAL_SECONDS)
    since = state.stopped_since
    if state.last_tick_at is not None and now - state.last_tick_at > STALL_TICKS * interval:
        # No tick ran (the beat or its broker was down): the clock stood
        # still from the tick that should have come next.
        stalled = state.last_tick_at + interval
        since = min(since, stalled) if since is not None else stalled
    state.last_tick_at = now
    if not redis_up:
        state.stopped_since = since or now
        state.save(update_fields=["last_tick_at", "stopped_since"])
        return ClockAnswer(running=False)
    answer = ClockAnswer(running=True)
    if since is not None and since < now:
        with connection.cursor() as cursor:
            cursor.execute(
                _GIVE_BACK_SQL,
                {
                    "start": since,
                    "end": now,
                    "event_id": event_id,
                    "admitted": QueueStatus.ADMITTED.value,
                },
            )
            answer.given_back = list(cursor.fetchall())
        answer.stood_still_seconds = (now - since).total_seconds()
        logger.warning(
            "admission clock of event %s stood still %.1f s: %s windows given back",
            event_id,
            answer.stood_still_seconds,
            len(answer.given_back),
        )
    state.stopped_since = None
    state.save(update_fields=["last_tick_at", "stopped_since"])
    return answer


@dataclass(frozen=True)
class Progress:
    """How far admission has reached: customers admitted so far, and the
    highest score admitted (None: nobody yet)."""

    served: int
    frontier: int | None


def admission_served_add(
    *, event_id: uuid.UUID | str, admitted: int, highest_score: int | None
) -> Progress:
    """Inside the admitting transaction (event row locked), after
    ``admission_state_ensure`` ran before the admissions: count ``admitted``
    more as served and move the frontier up to ``highest_score`` (never
    down: a join whose score was taken before a tick may commit after it);
    returns the totals."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {_STATE} SET served = served + %s, "  # noqa: S608
            "frontier = GREATEST(frontier, %s::bigint) WHERE event_id = %s "
            "RETURNING served, frontier",
            [admitted, highest_score, event_id],
        )
        served, frontier = cursor.fetchone()
        return Progress(int(served), frontier)


def admission_progress(*, event_id: uuid.UUID | str) -> Progress:
    """Postgres' count of customers admitted so far and the frontier."""
    row = (
        AdmissionState.objects.filter(event_id=event_id)
        .values_list("served", "frontier")
        .first()
    )
    return Progress(int(row[0]), row[1]) if row else Progress(0, None)


def admission_served(*, event_id: uuid.UUID | str) -> int:
    """Customers admitted so far (Postgres' count, ``AdmissionState.served``)."""
    return admission_progress(event_id=event_id).served
