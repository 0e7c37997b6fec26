"""Ticket inventory: Postgres truth and the Redis counters that front it.

Truth (invariant 3) is the number of a tier's ``Ticket`` rows not held by a
CLAIMED or CONFIRMED claim. The Redis counter per tier is a doorman that turns
most requests away before they reach Postgres; it may be missing or wrong,
never trusted for correctness.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import redis
from django.db import connection, transaction
from django.db.models import Count, Q

from events.models import Ticket, TicketTier
from fairqueue.redis import RedisStore, event_key

logger = logging.getLogger(__name__)

# A reservation older than this is from a process that died mid-claim. A claim
# holds its reservation for one short Postgres transaction, so this is far
# longer than any live claim; dropping a reservation that is in fact still
# alive only makes Redis show too many free tickets for a while, which
# Postgres refuses anyway (invariant 1). Kept below one reconciliation
# interval so a dead reservation stops hiding tickets by the next tick.
RESERVATION_MAX_AGE_MS = 20_000


def free_tickets_by_tier(*, event_id: uuid.UUID | str) -> dict[uuid.UUID, int]:
    """Postgres truth: free tickets per tier of an event."""
    rows = (
        TicketTier.objects.filter(event_id=event_id)
        .annotate(free=Count("tickets", filter=Q(tickets__claim__isnull=True)))
        .values_list("id", "free")
    )
    return dict(rows)


def free_tickets(*, tier_id: uuid.UUID | str) -> int:
    return Ticket.objects.filter(tier_id=tier_id, claim__isnull=True).count()


@dataclass(frozen=True)
class Reservation:
    event_id: str
    tier_id: str
    quantity: int
    id: str

    @property
    def member(self) -> str:
        """How the reservation is written in the in-flight sorted set."""
        return f"{self.id}:{self.quantity}"


class InventoryStore(RedisStore):
    scripts_dir = Path(__file__).parent / "lua"
    script_names = ("reserve", "unreserve", "sync", "give_back")

    @staticmethod
    def counter_key(event_id: object, tier_id: object) -> str:
        return event_key(event_id, "tier", tier_id, "available")

    @staticmethod
    def inflight_key(event_id: object, tier_id: object) -> str:
        return event_key(event_id, "tier", tier_id, "inflight")

    def _keys(self, event_id: object, tier_id: object) -> list[str]:
        return [self.counter_key(event_id, tier_id), self.inflight_key(event_id, tier_id)]

    def reserve(
        self,
        *,
        event_id: object,
        tier_id: object,
        quantity: int,
        lock_key: str | None = None,
        lock_token: str = "",
        lock_ttl_ms: int = 0,
    ) -> tuple[int, Reservation]:
        """Lua "decrement by quantity if enough": (left, reservation), or -1
        (cache miss) / -2 (not enough) with no reservation made.

        With ``lock_key`` the script first takes that lock (SET NX PX with
        ``lock_token``) in the same round trip: -3 when someone else holds it
        (nothing else happened); on -1 / -2 the lock stays taken."""
        reservation = Reservation(str(event_id), str(tier_id), quantity, uuid.uuid4().hex)
        keys = self._keys(event_id, tier_id)
        args: list[object] = [quantity, reservation.id, int(time.time() * 1000)]
        if lock_key is not None:
            keys.append(lock_key)
            args += [lock_token, lock_ttl_ms]
        result = self.scripts["reserve"](keys=keys, args=args)
        return int(result), reservation

    def finish(
        self,
        reservation: Reservation,
        *,
        give_back: bool,
        lock_key: str | None = None,
        lock_token: str = "",
    ) -> None:
        """The reservation's Postgres transaction is over: committed
        (``give_back=False``) or not (the tickets return to the counter).
        With ``lock_key``, also releases that lock if it still holds
        ``lock_token``, in the same round trip."""
        keys = self._keys(reservation.event_id, reservation.tier_id)
        args: list[object] = [reservation.quantity, reservation.id, "1" if give_back else "0"]
        if lock_key is not None:
            keys.append(lock_key)
            args.append(lock_token)
        self.scripts["unreserve"](keys=keys, args=args)

    def give_back(self, *, event_id: object, tier_id: object, quantity: int) -> None:
        """Tickets released in Postgres return to the counter (only if it
        exists: a missing counter is rebuilt from Postgres on the next miss)."""
        self.scripts["give_back"](keys=[self.counter_key(event_id, tier_id)], args=[quantity])

    def inflight(self, *, event_id: object, tier_id: object) -> list[str]:
        """Members (``<reservation id>:<quantity>``) of the in-flight set."""
        return list(self.r.zrange(self.inflight_key(event_id, tier_id), 0, -1))

    def sync(
        self,
        *,
        event_id: object,
        tier_id: object,
        free_in_postgres: int,
        committed: Iterable[str] = (),
    ) -> tuple[int, int]:
        """Force the counter to truth minus in-flight reservations, after
        dropping the ``committed`` members (their claims are in Postgres).
        Returns (previous or -1, new)."""
        cutoff = int(time.time() * 1000) - RESERVATION_MAX_AGE_MS
        previous, new = self.scripts["sync"](
            keys=self._keys(event_id, tier_id), args=[free_in_postgres, cutoff, *committed]
        )
        return int(previous), int(new)

    def available(self, *, event_id: object, tier_ids: Iterable[object]) -> dict[str, int | None]:
        tier_ids = [str(t) for t in tier_ids]
        values = self.r.mget([self.counter_key(event_id, t) for t in tier_ids]) if tier_ids else []
        return {
            t: (int(v) if v is not None else None) for t, v in zip(tier_ids, values, strict=True)
        }


_store: InventoryStore | None = None


def inventory_store() -> InventoryStore:
    global _store
    if _store is None:
        _store = InventoryStore()
    return _store


def inventory_sync_event(
    *, event_id: uuid.UUID | str, tier_ids: Iterable[object] | None = None
) -> list[tuple[str, int, int, int]]:
    """Bring the tier counters of an event (or only ``tier_ids``) to Postgres
    truth minus the reservations still in flight. Returns the tiers that
    diverged as (tier_id, postgres_free, redis_before, redis_after); each heal
    is logged with both numbers.

    The free counts and the committed reservations are read in ONE snapshot
    (REPEATABLE READ), and the in-flight set is read after that snapshot
    began. So a reservation whose claim committed before the snapshot is seen
    as committed (its tickets are already missing from the free count and it
    must not be subtracted twice), and one that commits later is subtracted
    exactly once. Without this, a process that died between its commit and
    finishing its reservation would hide those tickets until the reservation
    aged out.
    """
    from claims.models import Claim  # claims imports events: resolve at call time

    store = inventory_store()
    wanted = None if tier_ids is None else {str(t) for t in tier_ids}
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
        inflight = {t: store.inflight(event_id=event_id, tier_id=t) for t in free_by_tier}
        ids = [m.split(":", 1)[0] for members in inflight.values() for m in members]
        committed = Claim.objects.filter(reservation_id__in=ids).values_list("reservation_id")
        committed_ids = {row[0] for row in committed} if ids else set()
    healed = []
    for tier_id, free in free_by_tier.items():
        committed = [m for m in inflight[tier_id] if m.split(":", 1)[0] in committed_ids]
        previous, new = store.sync(
            event_id=event_id, tier_id=tier_id, free_in_postgres=free, committed=committed
        )
        if previous != new:
            healed.append((tier_id, free, previous, new))
            logger.warning(
                "inventory divergence healed event=%s tier=%s postgres_free=%s "
                "redis_before=%s redis_after=%s",
                event_id,
                tier_id,
                free,
                previous,
                new,
            )
    return healed


def available_tickets(*, event_id: uuid.UUID | str) -> dict[str, int]:
    """Approximate free tickets per tier: Redis, falling back to Postgres for
    missing counters or when Redis is down."""
    tier_ids = list(TicketTier.objects.filter(event_id=event_id).values_list("id", flat=True))
    try:
        counts = inventory_store().available(event_id=event_id, tier_ids=tier_ids)
    except redis.RedisError:
        counts = {str(t): None for t in tier_ids}
    if any(v is None for v in counts.values()):
        truth = free_tickets_by_tier(event_id=event_id)
        counts = {t: (v if v is not None else truth[uuid.UUID(t)]) for t, v in counts.items()}
    return {t: max(0, v) for t, v in counts.items()}
