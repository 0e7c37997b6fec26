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
from django.db.models import Count, Q

from events.models import Ticket, TicketTier
from fairqueue.redis import RedisStore, event_key

logger = logging.getLogger(__name__)

# A reservation older than this is from a process that died mid-claim.
RESERVATION_MAX_AGE_MS = 60_000


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
        self, *, event_id: object, tier_id: object, quantity: int
    ) -> tuple[int, Reservation]:
        """Lua "decrement by quantity if enough": (left, reservation), or -1
        (cache miss) / -2 (not enough) with no reservation made."""
        reservation = Reservation(str(event_id), str(tier_id), quantity, uuid.uuid4().hex)
        result = self.scripts["reserve"](
            keys=self._keys(event_id, tier_id),
            args=[quantity, reservation.id, int(time.time() * 1000)],
        )
        return int(result), reservation

    def finish(self, reservation: Reservation, *, give_back: bool) -> None:
        self.scripts["unreserve"](
            keys=self._keys(reservation.event_id, reservation.tier_id),
            args=[reservation.quantity, reservation.id, "1" if give_back else "0"],
        )

    def give_back(self, *, event_id: object, tier_id: object, quantity: int) -> None:
        """Tickets released in Postgres return to the counter (only if it
        exists: a missing counter is rebuilt from Postgres on the next miss)."""
        self.scripts["give_back"](keys=[self.counter_key(event_id, tier_id)], args=[quantity])

    def sync(self, *, event_id: object, tier_id: object, free_in_postgres: int) -> tuple[int, int]:
        """Force the counter to truth minus in-flight reservations.
        Returns (previous or -1, new)."""
        cutoff = int(time.time() * 1000) - RESERVATION_MAX_AGE_MS
        previous, new = self.scripts["sync"](
            keys=self._keys(event_id, tier_id), args=[free_in_postgres, cutoff]
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


def inventory_sync_event(*, event_id: uuid.UUID | str) -> list[tuple[str, int, int, int]]:
    """Bring every tier counter of an event to Postgres truth. Returns the
    tiers that diverged as (tier_id, postgres_free, redis_before, redis_after);
    each heal is logged with both numbers."""
    store = inventory_store()
    healed = []
    for tier_id, free in free_tickets_by_tier(event_id=event_id).items():
        previous, new = store.sync(event_id=event_id, tier_id=tier_id, free_in_postgres=free)
        if previous != new:
            healed.append((str(tier_id), free, previous, new))
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
