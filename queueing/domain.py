"""Pure rules of a place in the waiting room (no Django)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from enum import StrEnum

from fairqueue.states import StateMachine


class QueueStatus(StrEnum):
    WAITING = "WAITING"
    ADMITTED = "ADMITTED"
    COMPLETED = "COMPLETED"  # claimed tickets
    ABANDONED = "ABANDONED"  # left the queue
    EXPIRED = "EXPIRED"  # time to choose lapsed, nothing left, or the sale ended


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

    ADMISSION_WINDOW = "admission_window"  # admitted, did not claim in the time to choose
    # admitted, and nothing was left to claim: the customer is first on the waiting list
    SOLD_OUT = "sold_out"
    SALE_ENDED = "sale_ended"  # the organizer ended the sale, or its window closed
    # a waiting-list offer taken back: the ticket it stood for was re-instated
    # to a buyer whose late payment succeeded (the entry is back at the head)
    OFFER_WITHDRAWN = "offer_withdrawn"


class WaitlistStatus(StrEnum):
    """A place on an event's waiting list (the API shows these values)."""

    WAITING = "waiting"
    OFFERED = "offered"  # holds an admission for one ticket, for a window
    ACCEPTED = "accepted"  # claimed the ticket it was offered
    LAPSED = "lapsed"  # let the offer's window pass
    LEFT = "left"
    CLOSED = "closed"  # the sale ended before an offer came


W = WaitlistStatus
WAITLIST_MACHINE = StateMachine(
    "waitlist_entry",
    {
        W.WAITING: {W.OFFERED, W.LEFT, W.CLOSED},
        # back to WAITING: the offer was withdrawn (its ticket re-instated)
        W.OFFERED: {W.ACCEPTED, W.LAPSED, W.LEFT, W.WAITING},
    },
)

# At most one of these per (event, customer).
WAITLIST_LIVE_STATUSES = (W.WAITING, W.OFFERED)

# Who joins the waiting list within this long of the sell-out is drawn into a
# random order when it has passed (as the pre-queue is at sale start);
# everyone after keeps the order they came in.
WAITLIST_DRAW_SECONDS = 60


def any_tier_price(prices: Iterable[int]) -> int:
    """What a waiting-list entry for any tier is worth at face value: the
    cheapest tier's price (0 for an event without tiers). The organizer's
    figures of the list count it so."""
    return min(prices, default=0)


def admission_capacity(
    *,
    batch_size: int,
    max_active_admitted: int,
    admitted_now: int,
    free_tickets: int,
    ahead: int = 0,
) -> int:
    """How many to admit now: never more than the batch, never more admitted
    at once than the event allows, and never more than the tickets still free
    (plus ``ahead``, see ``admit_ahead_count``) minus the customers already
    admitted who have not claimed yet."""
    room = free_tickets + ahead - admitted_now
    return max(0, min(batch_size, max_active_admitted - admitted_now, room))


# Admitting ahead of no-shows (an event's ``admit_ahead``): at most this share
# of the free tickets, in percent, and only once this many admissions from the
# line have ended (claimed or lapsed), so the share is measured, not guessed.
ADMIT_AHEAD_MAX_PERCENT = 5
ADMIT_AHEAD_MIN_ENDED = 20


def admit_ahead_count(*, free_tickets: int, lapsed: int, claimed: int) -> int:
    """How many more customers than free tickets may hold an admission: the
    measured share of admissions that lapse (``lapsed`` of ``lapsed +
    claimed``) of the free tickets, at most ADMIT_AHEAD_MAX_PERCENT of them,
    rounded down (so none below 100 / ADMIT_AHEAD_MAX_PERCENT free tickets
    at the largest share). Whole numbers only: the bound is exact."""
    ended = lapsed + claimed
    if free_tickets <= 0 or lapsed <= 0 or ended < ADMIT_AHEAD_MIN_ENDED:
        return 0
    return min(free_tickets * lapsed // ended, free_tickets * ADMIT_AHEAD_MAX_PERCENT // 100)


# The page warns this long before the time to choose runs out, and offers
# its one extension (queueing.services.extension).
CHOOSE_WARNING_SECONDS = 30


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


# --- the public line state ---------------------------------------------------------------
#
# One document per event, the same bytes for everyone, written once per tick
# (``queueing.services.line_state``). A page learns its own number once (its
# score, and its place with the served counter of that moment), then places
# itself from this document alone:
# - its place is ``position - (served - served at the snapshot)``: every
#   admission since the snapshot took someone ahead of it, and a customer who
#   left ahead only makes the truth better, so the place shown is never
#   better than the truth;
# - it is admitted once ``frontier >= its score``: the tick admits the lowest
#   (score, customer) WAITING entries, so the highest score admitted passes a
#   waiting customer's score exactly when the tick admits them (on a tie of
#   scores the page asks, and an answer of WAITING is the tie going the other
#   way);
# - ``epoch`` changes when every page must learn its number again: the
#   pre-queue draw at sale start gives the pre-queue new scores.
# It holds nothing a customer could use to move in the line: counters, the
# highest score admitted (a join time, or a draw rank), the rate, the status.

# Pages that must learn their number again (after the draw) come back spread
# over ``waiting / RELEARN_PER_SECOND`` seconds, within a tick and this.
RELEARN_MAX_SECONDS = 60


def relearn_within_seconds(*, waiting: int | None, per_second: float, interval: float) -> int:
    """The window over which pages spread their questions after an epoch
    change: long enough that the origin sees about ``per_second`` of them,
    at least a tick, at most RELEARN_MAX_SECONDS."""
    spread = (waiting or 0) / per_second if per_second > 0 else RELEARN_MAX_SECONDS
    return math.ceil(min(float(RELEARN_MAX_SECONDS), max(interval, spread)))


def line_epoch(*, prequeue_drawn: bool) -> int:
    """0 until the pre-queue draw, 1 after it (an event without a pre-queue
    stays at 0): the scores of one epoch never change."""
    return 1 if prequeue_drawn else 0


def line_state_body(
    *,
    event_id: str,
    status: str,
    epoch: int,
    served: int,
    frontier: int | None,
    waiting: int | None,
    rate_per_second: float | None,
    batch_size: int,
    interval_seconds: float,
    at_ms: int,
    next_tick_ms: int,
    relearn_within: int,
) -> dict[str, object]:
    """The document, in the order it is written (see above). The socket
    sends the same bytes as a ``line`` message."""
    return {
        "type": "line",
        "event_id": event_id,
        "status": status,
        "epoch": epoch,
        "served": served,
        "frontier": frontier,
        "waiting": waiting,
        "rate_per_second": round(rate_per_second, 3) if rate_per_second is not None else None,
        "admission_batch_size": batch_size,
        "interval_seconds": interval_seconds,
        "at": at_ms,
        "next_tick_at": next_tick_ms,
        "relearn_within_seconds": relearn_within,
    }
