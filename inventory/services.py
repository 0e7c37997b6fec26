"""Writes of ticket inventory: ticket rows made to match a tier's size, the
Postgres guard that hands them to claims (invariant 1), and the Redis
counters brought back to Postgres truth (invariant 2)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connection, transaction

from fairqueue.errors import InvalidInput
from fairqueue.locks import ticket_rows_lock
from fairqueue.metrics import heal
from inventory.models import Ticket
from inventory.selectors import free_tickets_by_tier
from inventory.store import inventory_store

logger = logging.getLogger(__name__)

TABLE = Ticket._meta.db_table

_FREE_OF_TIER = f"""
    SELECT id FROM {TABLE}
    WHERE tier_id = %s AND claim_id IS NULL AND NOT blocked"""  # noqa: S608

# Up to N free tickets of a tier, locked without waiting: concurrent claims
# lock different rows instead of queueing on one counter row (SKIP LOCKED
# never waits, so it is outside the lock order of fairqueue/locks.py);
# MATERIALIZED keeps the locking SELECT evaluated exactly once; the rows are
# then reached by id (``= ANY(ARRAY(...))``, the primary key), never by a join
# whose plan follows the table's statistics: statistics taken while the table
# was empty make such a join scan every row once per picked row. A CTE
# fragment named ``picked``: ``tickets_take`` uses it, and claims composes it
# with the INSERT of the claim itself (one statement on the claim's hot path).
PICK_FREE_SQL = f"""
picked AS MATERIALIZED ({_FREE_OF_TIER}
    LIMIT %s
    FOR UPDATE SKIP LOCKED
)"""

_TAKE_SQL = f"""
WITH {PICK_FREE_SQL}
UPDATE {TABLE} SET claim_id = %s
WHERE id = ANY(ARRAY(SELECT id FROM picked))
"""  # noqa: S608  (the table name comes from the model, values are parameters)


class ShortOfTickets(Exception):
    """Fewer free rows could be taken than asked for: roll the claim back."""


def tickets_take(
    *, tier_id: uuid.UUID, claim_id: uuid.UUID, quantity: int, skip_locked: bool
) -> int:
    """Give up to ``quantity`` free tickets of the tier to an existing claim;
    returns how many it got. Must run inside the claim's transaction. Without
    ``skip_locked`` it waits (under the lock timeout) for rows claims in
    flight hold, locking in ascending id (``ticket_rows_lock``); the caller
    must then hold no ticket row of the tier."""
    if not skip_locked:
        free = Ticket.objects.filter(tier_id=tier_id, claim__isnull=True, blocked=False)
        ids = ticket_rows_lock(free.values_list("id", flat=True), limit=quantity)
        return Ticket.objects.filter(id__in=ids).update(claim_id=claim_id)
    with connection.cursor() as cursor:
        cursor.execute(_TAKE_SQL, [tier_id, quantity, claim_id])
        taken: int = cursor.rowcount
    return taken


@dataclass(frozen=True)
class Freed:
    """Tickets of one tier back on sale: how many, and the Redis reservations
    that had taken them (``<id>:<quantity>``), which the give-back drops from
    the recently-committed set before the rows can be taken again."""

    quantity: int
    reservations: tuple[str, ...] = ()
    seats: tuple[str, ...] = ()  # the labels, on a reserved tier


def tickets_free(*, claim_ids: Iterable[object]) -> dict[uuid.UUID, Freed]:
    """The claims' ticket rows go back to sale; returns what was freed per
    tier. Must run inside the transaction that releases the claims."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {TABLE} SET claim_id = NULL WHERE claim_id = ANY(%s) "  # noqa: S608
            "RETURNING tier_id, reservation_id, label",
            [list(claim_ids)],
        )
        counts: dict[uuid.UUID, dict[str, int]] = {}
        labels: dict[uuid.UUID, list[str]] = {}
        for tier_id, reservation_id, label in cursor.fetchall():
            per_reservation = counts.setdefault(tier_id, {})
            per_reservation[reservation_id] = per_reservation.get(reservation_id, 0) + 1
            if label:
                labels.setdefault(tier_id, []).append(label)
    return {
        tier_id: Freed(
            quantity=sum(per_reservation.values()),
            reservations=tuple(f"{r}:{n}" for r, n in per_reservation.items() if r),
            seats=tuple(sorted(labels.get(tier_id, ()))),
        )
        for tier_id, per_reservation in counts.items()
    }


# A tier's missing ticket rows, made by Postgres: nothing per row crosses the
# wire, however large the tier.
_ADD_SQL = f"""
INSERT INTO {TABLE} (tier_id, reservation_id, accessible, restricted_view, blocked)
SELECT %s, '', false, false, false FROM generate_series(1, %s)
"""  # noqa: S608
# Surplus free rows, picked and deleted by Postgres (rows claims in flight
# hold are skipped, not waited for), by id as ``PICK_FREE_SQL`` says why.
_REMOVE_FREE_SQL = f"""
DELETE FROM {TABLE} WHERE id = ANY(ARRAY({_FREE_OF_TIER}
    LIMIT %s
    FOR UPDATE SKIP LOCKED
))
"""  # noqa: S608


def tickets_provision(*, tier_id: uuid.UUID, inventory: int) -> None:
    """Make a tier's ticket rows number ``inventory``, in one statement.
    Only free tickets can be removed; an inventory below what is already
    held is refused (and nothing is removed: the caller's transaction rolls
    back). The caller holds the tier's row lock (two saves must not both add
    the difference)."""
    existing = Ticket.objects.filter(tier_id=tier_id).count()
    if inventory == existing:
        return
    with connection.cursor() as cursor:
        if inventory > existing:
            cursor.execute(_ADD_SQL, [tier_id, inventory - existing])
            return
        surplus = existing - inventory
        cursor.execute(_REMOVE_FREE_SQL, [tier_id, surplus])
        removed: int = cursor.rowcount
    if removed < surplus:
        raise InvalidInput(
            "The inventory cannot go below the tickets already claimed or sold.",
            details={"inventory": inventory, "held": existing - removed},
        )


def inventory_sync_event(
    *, event_id: uuid.UUID | str, tier_ids: Iterable[object] | None = None
) -> list[tuple[str, int, int, int]]:
    """Bring the tier counters of an event (or only ``tier_ids``) to Postgres
    truth minus the reservations still in flight. Returns the tiers that
    diverged as (tier_id, postgres_free, redis_before, redis_after); each heal
    is logged with both numbers. With Redis unreachable it changes nothing
    and returns no tier (the next sync heals).

    The free counts and the committed reservations are read in ONE snapshot
    (REPEATABLE READ), and the reservations (in flight, and recently
    committed) are read after that snapshot began. So a reservation whose
    claim committed before the snapshot is seen as committed (its tickets are
    already missing from the free count and it must not be subtracted
    twice), and one that commits later, even one finished before the counter
    is written, is subtracted exactly once. Without this, a process that died
    between its commit and finishing its reservation would hide those
    tickets until the reservation aged out, and a sync running while claims
    commit (at sell-out) would show tickets that are gone.

    Releases are the other way round: one that commits after the snapshot
    began is not in its free count, and its give-back may reach Redis before
    the counter is written. The tally of tickets given back is read BEFORE
    the snapshot begins, and the sync script adds whatever was given back
    since; so a release is never wiped. A release that
    commits between that read and the snapshot is counted twice: the counter
    is then high until the next sync, the safe side (Postgres refuses what
    is not there).
    """
    store = inventory_store()
    wanted = None if tier_ids is None else {str(t) for t in tier_ids}
    returned_before = store.returned(event_id=event_id)
    if returned_before is None:
        return []
    fresh_transaction = not connection.in_atomic_block
    with transaction.atomic():
        if fresh_transaction:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        free_by_tier = {
            str(tier): free
            for tier, free in free_tickets_by_tier(event_id=event_id).items()
            if wanted is None or str(tier) in wanted
        }
        inflight: dict[str, list[str]] = {}
        for tier_id in free_by_tier:
            members = store.reservations(event_id=event_id, tier_id=tier_id)
            if members is None:
                return []
            inflight[tier_id] = members
        ids = [m.split(":", 1)[0] for members in inflight.values() for m in members]
        committed_ids = (
            set(
                Ticket.objects.filter(reservation_id__in=ids)
                .values_list("reservation_id", flat=True)
                .distinct()
            )
            if ids
            else set()
        )
    healed: list[tuple[str, int, int, int]] = []
    for tier_id, free in free_by_tier.items():
        committed = [m for m in inflight[tier_id] if m.split(":", 1)[0] in committed_ids]
        answer = store.sync(
            event_id=event_id,
            tier_id=tier_id,
            free_in_postgres=free,
            returned_before=returned_before.get(tier_id, 0),
            committed=committed,
        )
        if answer is None:
            return healed
        previous, new = answer
        if previous != new:
            healed.append((tier_id, free, previous, new))
            # A missing counter (-1: Redis was wiped, or the event just went
            # live) is routine; a counter that disagreed is worth a look.
            kind = "inventory_rebuilt" if previous < 0 else "inventory_divergence"
            heal(kind)
            logger.log(
                logging.INFO if previous < 0 else logging.WARNING,
                "inventory %s event=%s tier=%s postgres_free=%s redis_before=%s redis_after=%s",
                kind,
                event_id,
                tier_id,
                free,
                previous,
                new,
            )
    return healed
