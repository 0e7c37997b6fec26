"""Writes of reserved seating: a tier's seat map (generated or imported),
blocked seats, and the Postgres guard taking exactly the chosen seats.

Seats are the tier's ticket rows (``inventory.models.Ticket``) with a label,
so the guard that refuses an oversell of general admission (invariant 1)
refuses a seat sold twice: a seat is taken by setting ``claim`` on its row,
only while it is free, under a row lock. Seat rows are always locked in one
order (by id), so two claims wanting overlapping seats never deadlock. Chosen seats wait
for a claim in flight that holds one of them (bounded by the lock timeout),
so the answer names exactly the seats that are taken once it is over; best
available skips locked seats (``SKIP LOCKED``) and tries its next candidate
instead of waiting."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from itertools import islice

from django.db import transaction

from fairqueue.errors import Busy, InvalidInput
from fairqueue.locks import seat_rows_lock
from inventory.models import Ticket
from inventory.seating.domain import Seat, best_available, rank_rows
from inventory.seating.selectors import seats_free, tier_seats

# How many candidate seat sets best available tries (each a savepoint)
# before "busy, retry", and among how many of the best left it picks after a
# candidate was taken under it.
BEST_TRIES = 32
BEST_SPREAD = 4
# Best available reads the free seats of this many seats' rows at a time.
CHUNK_SEATS = 1000
_random = random.Random()


class SeatsTaken(Exception):
    """Some chosen seats are not free (or are locked by a claim in flight)."""

    def __init__(self, labels: Sequence[str]) -> None:
        super().__init__(", ".join(labels))
        self.labels = sorted(labels)


def seats_lock(
    *, tier_id: uuid.UUID, labels: Sequence[str], skip_locked: bool = False
) -> list[str]:
    """Lock exactly these seats if every one is free; raises SeatsTaken (and
    keeps none locked: a savepoint rolls back) otherwise. Waits for seats
    locked by claims in flight unless ``skip_locked`` (then they count as
    taken). Must run inside a transaction (with a lock timeout)."""
    # The chosen seats that are free, locked in id order (fairqueue/locks.py).
    # READ COMMITTED re-checks a row it waited for: a seat taken meanwhile drops out.
    chosen = Ticket.objects.filter(
        tier_id=tier_id, label__in=list(labels), claim__isnull=True, blocked=False
    )
    with transaction.atomic():
        got = {
            str(label)
            for label in seat_rows_lock(
                chosen.values_list("label", flat=True), skip_locked=skip_locked
            )
        }
        if len(got) < len(set(labels)):
            raise SeatsTaken(sorted(set(labels) - got))
    return sorted(got)


def seats_lock_best(*, tier_id: uuid.UUID, quantity: int) -> list[str]:
    """Best available (``inventory.seating.domain``): lock the best ``quantity``
    free seats of the tier and return their labels.

    The rows are searched nearest the stage first, a few at a time
    (``CHUNK_SEATS``; only their free seats are read), for an adjacent block
    of ordinary seats; only when no row has one is the whole map read for
    the rest of the rule (accessible seats, then the best split). Each
    candidate is tried in a savepoint, so one another claim took first
    leaves no lock behind; the seats it could not have are then left out,
    and the next choice is made at random among the few best left (claims
    racing for the same best seats spread out instead of queueing on each
    next best in turn). Raises SeatsTaken([]) when fewer than ``quantity``
    seats are free and Busy when every try was taken under us. Must run
    inside a transaction."""
    seats, ranked = _layout(tier_id)
    tries = [0]
    for rows in _chunks(ranked):
        chunk = [seat for row in rows for seat in row]
        free = seats_free(tier_id=tier_id, labels=[seat.label for seat in chunk])
        blocks = partial(
            best_available,
            seats=chunk,
            quantity=quantity,
            ranked=rows,
            split=False,
            accessible=False,
        )
        got = _lock_first(tier_id, free, tries, blocks)
        if got:
            return got
    free = seats_free(tier_id=tier_id)
    got = _lock_first(
        tier_id,
        free,
        tries,
        partial(best_available, seats=seats, quantity=quantity, ranked=ranked),
    )
    if got:
        return got
    if len(free) < quantity:
        raise SeatsTaken([])
    raise Busy("Seats are being claimed right now; retry shortly.")


def _lock_first(
    tier_id: uuid.UUID,
    free: set[str],
    tries: list[int],
    candidates: Callable[..., Iterator[list[str]]],
) -> list[str] | None:
    """Lock the first candidate that can be had (the very best first, then
    one at random among the ``BEST_SPREAD`` best left); None when there is
    none, or after ``BEST_TRIES`` tries in all (``tries`` counts them)."""
    first = True
    while tries[0] < BEST_TRIES:
        best = list(islice(candidates(free=free), 1 if first else BEST_SPREAD))
        if not best:
            return None
        first = False
        tries[0] += 1
        try:
            return seats_lock(tier_id=tier_id, labels=_random.choice(best), skip_locked=True)
        except SeatsTaken as exc:
            free -= set(exc.labels)
    return None


def _chunks(ranked: Sequence[Sequence[Seat]]) -> Iterator[Sequence[Sequence[Seat]]]:
    """The ranked rows, a few at a time (about ``CHUNK_SEATS`` seats)."""
    start, size = 0, 0
    for end, row in enumerate(ranked, start=1):
        size += len(row)
        if size >= CHUNK_SEATS:
            yield ranked[start:end]
            start, size = end, 0
    if start < len(ranked):
        yield ranked[start:]


# The seat layout of a tier changes only when its map is replaced or seats
# are (un)blocked: best available keeps it, ranked, per process for a few
# seconds (a 20,000-seat map is not read and sorted on every claim). A stale
# layout only offers a candidate the lock then refuses (it re-checks blocked
# and free) or misses a just-unblocked seat for a moment.
LAYOUT_TTL_SECONDS = 5.0
_layouts: dict[uuid.UUID, tuple[float, list[Seat], list[list[Seat]]]] = {}


def _layout(tier_id: uuid.UUID) -> tuple[list[Seat], list[list[Seat]]]:
    now = time.monotonic()
    cached = _layouts.get(tier_id)
    if cached is not None and now - cached[0] < LAYOUT_TTL_SECONDS:
        return cached[1], cached[2]
    seats = tier_seats(tier_id=tier_id)
    ranked = rank_rows(seats)
    _layouts[tier_id] = (now, seats, ranked)
    return seats, ranked


def layout_forget(tier_id: uuid.UUID) -> None:
    _layouts.pop(tier_id, None)


def seats_replace(*, tier_id: uuid.UUID, seats: Sequence[Seat]) -> int:
    """The tier's seat map becomes ``seats`` (the old rows are deleted).
    Refused while any seat of the tier is held. Returns the number of seats.
    The caller holds the tier's row lock and updates its inventory."""
    labels = [s.label for s in seats]
    if not seats:
        raise InvalidInput("A seat map needs at least one seat.")
    duplicates = sorted({label for label in labels if labels.count(label) > 1})[:20]
    if len(set(labels)) != len(labels):
        raise InvalidInput("Seat labels must be unique.", details={"duplicates": duplicates})
    if Ticket.objects.filter(tier_id=tier_id, claim__isnull=False).exists():
        raise InvalidInput("The seat map cannot change while seats are held or sold.")
    layout_forget(tier_id)
    with transaction.atomic():
        Ticket.objects.filter(tier_id=tier_id).delete()
        Ticket.objects.bulk_create(
            [
                Ticket(
                    tier_id=tier_id,
                    section=s.section,
                    row=s.row,
                    number=s.number,
                    label=s.label,
                    x=s.x,
                    y=s.y,
                    accessible=s.accessible,
                    restricted_view=s.restricted_view,
                )
                for s in seats
            ],
            batch_size=5000,
        )
    return len(seats)


def seats_set_blocked(*, tier_id: uuid.UUID, labels: Sequence[str], blocked: bool) -> list[str]:
    """Block (or unblock) free seats; returns the labels that changed. A held
    or sold seat is not blocked (its claim keeps it); rows locked by a claim
    in flight are skipped too."""
    with transaction.atomic():
        ids = list(
            Ticket.objects.select_for_update(skip_locked=True)
            .filter(tier_id=tier_id, label__in=list(labels), claim__isnull=True)
            .exclude(blocked=blocked)
            .order_by("id")
            .values_list("id", flat=True)
        )
        changed = list(
            Ticket.objects.filter(id__in=ids).order_by("label").values_list("label", flat=True)
        )
        Ticket.objects.filter(id__in=ids).update(blocked=blocked)
    layout_forget(tier_id)
    return [label for label in changed if label]


def seats_assign(
    *, tier_id: uuid.UUID, claim_id: uuid.UUID, labels: Sequence[str], reservation_id: str = ""
) -> None:
    """Seats this transaction has locked (``seats_lock``) go to the claim."""
    Ticket.objects.filter(tier_id=tier_id, label__in=list(labels)).update(
        claim_id=claim_id, reservation_id=reservation_id
    )


def seats_take(*, tier_id: uuid.UUID, claim_id: uuid.UUID, labels: Sequence[str]) -> None:
    """Give exactly these seats to an existing claim (a late payment
    re-instating a released claim); SeatsTaken when any is not free. Must run
    inside the claim's transaction."""
    with transaction.atomic():
        seats_lock(tier_id=tier_id, labels=labels)
        seats_assign(tier_id=tier_id, claim_id=claim_id, labels=labels)
