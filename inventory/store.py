"""The Redis side of ticket inventory: a counter per tier that turns most
claims away before they reach Postgres, and the reservations in flight.

Keys (``fq:{<event_id>}:tier:<tier_id>:...``): ``available`` (the counter) and
``inflight`` (sorted set of ``<reservation id>:<quantity>``, scored by the time
the reservation was made); and per event ``fq:{<event_id>}:returned`` (hash:
tier id -> tickets given back so far, which lets a sync count the releases
that land while it runs). The counter may be missing or wrong; Postgres
(``inventory.models.Ticket``) is the truth and ``inventory.services`` brings
the counter back to it.

Every method is ``@best_effort`` (``fairqueue.redis``): with Redis
unreachable it answers None ("Redis does not know") and its callers go to
Postgres, which decides alone (invariant 1).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from fairqueue.redis import RedisStore, best_effort, event_key, required, text

# A reservation older than this is from a process that died mid-claim. A claim
# holds its reservation for one short Postgres transaction, so this is far
# longer than any live claim; dropping a reservation that is in fact still
# alive only makes Redis show too many free tickets for a while, which
# Postgres refuses anyway (invariant 1). Kept below one reconciliation
# interval so a dead reservation stops hiding tickets by the next tick.
RESERVATION_MAX_AGE_MS = 20_000

# How long a give-back's mark outlives it: far longer than redis-py's retry of
# a call whose reply was lost (a socket timeout and a backoff of milliseconds).
GIVE_BACK_MARK_MS = 60_000


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


@dataclass(frozen=True)
class TierSnapshot:
    counter: int | None  # None: no counter (rebuilt from Postgres on the next miss)
    in_flight: int  # tickets held by reservations whose claim has not finished


class InventoryStore(RedisStore):
    scripts_dir = Path(__file__).parent / "lua"
    script_names = ("reserve", "unreserve", "sync", "give_back")

    @staticmethod
    def counter_key(event_id: object, tier_id: object) -> str:
        return event_key(event_id, "tier", tier_id, "available")

    @staticmethod
    def inflight_key(event_id: object, tier_id: object) -> str:
        return event_key(event_id, "tier", tier_id, "inflight")

    @staticmethod
    def committed_key(event_id: object, tier_id: object) -> str:
        return event_key(event_id, "tier", tier_id, "committed")

    @staticmethod
    def returned_key(event_id: object) -> str:
        return event_key(event_id, "returned")

    @staticmethod
    def give_back_key(event_id: object, give_back_id: str) -> str:
        return event_key(event_id, "given_back", give_back_id)

    def _keys(self, event_id: object, tier_id: object) -> list[str]:
        return [self.counter_key(event_id, tier_id), self.inflight_key(event_id, tier_id)]

    @best_effort(None)
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
        (cache miss) / -2 (not enough) with no reservation made; None when
        Redis could not be asked.

        With ``lock_key`` the script first takes that lock (SET NX PX with
        ``lock_token``) in the same round trip: -3 when someone else holds it
        (nothing else happened); on -1 / -2 the lock stays taken.

        The script is idempotent for one call: when its reply is lost to a
        timeout, the client's retry sends the same reservation id and lock
        token again, and the second run answers like the first instead of
        taking the tickets twice or finding the lock "held"."""
        reservation = Reservation(str(event_id), str(tier_id), quantity, uuid.uuid4().hex)
        keys = self._keys(event_id, tier_id)
        args: list[object] = [quantity, reservation.id, int(time.time() * 1000)]
        if lock_key is not None:
            keys.append(lock_key)
            args += [lock_token, lock_ttl_ms]
        result = self.scripts["reserve"](keys=keys, args=args)
        return int(result), reservation

    @best_effort(None)
    def finish(
        self,
        reservation: Reservation,
        *,
        give_back: bool,
        lock_key: str | None = None,
        lock_token: str = "",
        also_remove: tuple[str, str] | None = None,
    ) -> None:
        """The reservation's Postgres transaction is over: committed
        (``give_back=False``) or not (the tickets return to the counter).
        With ``lock_key``, also releases that lock if it still holds
        ``lock_token``, in the same round trip; with ``also_remove`` (a
        sorted set of the same event and a member, with ``lock_key``) also
        removes that member there."""
        keys = [
            *self._keys(reservation.event_id, reservation.tier_id),
            self.committed_key(reservation.event_id, reservation.tier_id),
        ]
        now = int(time.time() * 1000)
        args: list[object] = [
            reservation.quantity,
            reservation.id,
            "1" if give_back else "0",
            now,
            now - RESERVATION_MAX_AGE_MS,
        ]
        if lock_key is not None:
            keys.append(lock_key)
            args.append(lock_token)
            if also_remove is not None:
                keys.append(also_remove[0])
                args.append(also_remove[1])
        self.scripts["unreserve"](keys=keys, args=args)

    @best_effort(None)
    def give_back(
        self,
        *,
        event_id: object,
        tier_id: object,
        quantity: int,
        reservations: Iterable[str] = (),
    ) -> None:
        """Tickets released in Postgres return to the counter (only if it
        exists: a missing counter is rebuilt from Postgres on the next miss),
        and to the tier's returned tally; the ``reservations`` that had taken
        them leave the recently-committed set (their rows may be taken again
        by another reservation, and a sync would no longer find them).

        The script is idempotent for one call (a mark of its own id): redis-py's
        retry after a reply lost to a timeout gives nothing back twice. Each
        release calls it once, after the commit that freed the rows, with the
        count that commit freed."""
        self.scripts["give_back"](
            keys=[
                self.counter_key(event_id, tier_id),
                self.returned_key(event_id),
                self.committed_key(event_id, tier_id),
                self.give_back_key(event_id, uuid.uuid4().hex),
            ],
            args=[quantity, str(tier_id), GIVE_BACK_MARK_MS, *reservations],
        )

    @best_effort(None)
    def returned(self, *, event_id: object) -> dict[str, int]:
        """Tickets given back so far, per tier id (missing tiers: none yet).
        A sync reads this before its Postgres snapshot begins."""
        tally = self.r.hgetall(self.returned_key(event_id))
        return {text(t): int(n) for t, n in tally.items()}

    @best_effort(None)
    def inflight(self, *, event_id: object, tier_id: object) -> list[str]:
        """Members (``<reservation id>:<quantity>``) of the in-flight set."""
        members = cast(
            list[str | bytes], self.r.zrange(self.inflight_key(event_id, tier_id), 0, -1)
        )
        return [text(m) for m in members]

    @best_effort(None)
    def reservations(self, *, event_id: object, tier_id: object) -> list[str]:
        """Members of the in-flight and the recently-committed sets: every
        reservation a sync must judge against its Postgres snapshot."""
        pipe = self.r.pipeline(transaction=True)
        pipe.zrange(self.inflight_key(event_id, tier_id), 0, -1)
        pipe.zrange(self.committed_key(event_id, tier_id), 0, -1)
        inflight, committed = pipe.execute()
        return [text(m) for m in cast(list[str | bytes], [*inflight, *committed])]

    @best_effort(None)
    def sync(
        self,
        *,
        event_id: object,
        tier_id: object,
        free_in_postgres: int,
        returned_before: int,
        committed: Iterable[str] = (),
    ) -> tuple[int, int]:
        """Force the counter to the snapshot's free count minus the
        reservations it did not see committed, plus what was given back since
        ``returned_before`` was read (``sync.lua``); ``committed`` names the
        reservations the snapshot shows committed. Returns (previous or -1,
        new)."""
        now = int(time.time() * 1000)
        previous, new = self.scripts["sync"](
            keys=[
                *self._keys(event_id, tier_id),
                self.returned_key(event_id),
                self.committed_key(event_id, tier_id),
            ],
            args=[
                free_in_postgres,
                now - RESERVATION_MAX_AGE_MS,
                str(tier_id),
                returned_before,
                now,
                *committed,
            ],
        )
        return int(previous), int(new)

    @best_effort(None)
    def available(self, *, event_id: object, tier_ids: Iterable[object]) -> dict[str, int | None]:
        ids = [str(t) for t in tier_ids]
        values = self.r.mget([self.counter_key(event_id, t) for t in ids]) if ids else []
        return {t: (int(v) if v is not None else None) for t, v in zip(ids, values, strict=True)}

    @required
    def tier_snapshot(
        self, *, event_id: object, tier_ids: Iterable[object]
    ) -> dict[str, TierSnapshot]:
        """Counter and reservations in flight of each tier, read in one
        MULTI (the keys share the event's hash slot): what the invariant
        check compares with Postgres."""
        ids = [str(t) for t in tier_ids]
        pipe = self.r.pipeline(transaction=True)
        for tier_id in ids:
            pipe.get(self.counter_key(event_id, tier_id))
            pipe.zrange(self.inflight_key(event_id, tier_id), 0, -1)
        replies = pipe.execute() if ids else []
        return {
            tier_id: TierSnapshot(
                counter=int(counter) if counter is not None else None,
                in_flight=sum(int(m.rsplit(":", 1)[1]) for m in members),
            )
            for tier_id, counter, members in zip(ids, replies[0::2], replies[1::2], strict=True)
        }


_store: InventoryStore | None = None


def inventory_store() -> InventoryStore:
    global _store
    if _store is None:
        _store = InventoryStore()
    return _store
