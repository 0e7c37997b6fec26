"""The seat map customers read (every seat of a reserved tier with its
status), cached in Redis, and the news that seats changed.

The rendered JSON lives under the event's hash tag
(``fq:{<event_id>}:tier:<tier_id>:seatmap``) next to a version that every
change moves on (``seatmap_bump.lua``). A read is one round trip
(``seatmap_read.lua``): a stored map whose version is current and which is
younger than half a reconcile interval is served as it is; any other is
rebuilt from Postgres by one caller at a time (the rebuild lock also
throttles rebuilds to one per ``REBUILD_EVERY_MS`` under a storm of changes)
while the others serve the older map: the live deltas
(``inventory.signals.seats_changed``) carry what changed since. The age
limit is what makes the map agree with Postgres within one reconcile
interval whatever Redis lost: a bump that failed after its change
committed, an older snapshot of the map and its version restored. With
Redis unreachable the map is read from Postgres (the failure rule: Redis is
a cache here).

The map is stored gzipped (base64 in Redis, whose client here speaks text):
a 20,000-seat map is 2.6 MB of JSON and 0.15 MB gzipped, so the read moves
an eighteenth of the bytes, and clients that accept gzip get it as stored."""

from __future__ import annotations

import base64
import gzip
import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction

from fairqueue.redis import RedisStore, best_effort, event_key, text
from inventory.models import Ticket
from inventory.seating.domain import SeatChange
from inventory.seating.selectors import tier_seat_statuses
from inventory.signals import seats_changed

REBUILD_EVERY_MS = 250
GZIP_LEVEL = 5  # 20,000 seats: 2.6 MB -> 0.15 MB in ~30 ms, once per change burst
MAP_TTL_SECONDS = 3600


class SeatMapStore(RedisStore):
    scripts_dir = Path(__file__).parent / "lua"
    script_names = ("seatmap_read", "seatmap_write", "seatmap_bump")

    @staticmethod
    def keys(event_id: object, tier_id: object) -> list[str]:
        base = event_key(event_id, "tier", tier_id, "seatmap")
        return [base, f"{base}:version", f"{base}:rebuild"]

    @best_effort(None)
    def read(self, *, event_id: object, tier_id: object) -> tuple[str | None, int | None, bool]:
        """(stored "<version>:<built at>:<body>" or None, current version or
        None, whether this caller should rebuild: then the version is one no
        stored map has)."""
        stored, version, rebuild = self.scripts["seatmap_read"](
            keys=self.keys(event_id, tier_id), args=[REBUILD_EVERY_MS, max_age_ms()]
        )
        return (
            text(stored) if stored else None,
            int(version) if version else None,
            bool(rebuild),
        )

    @best_effort(None)
    def write(self, *, event_id: object, tier_id: object, version: int, body: str) -> None:
        self.scripts["seatmap_write"](
            keys=self.keys(event_id, tier_id)[:1], args=[version, body, MAP_TTL_SECONDS]
        )

    @best_effort(None)
    def bump(self, *, event_id: object, tier_id: object) -> int:
        return int(
            self.scripts["seatmap_bump"](keys=self.keys(event_id, tier_id)[1:2], args=[_now_ms()])
        )


def max_age_ms() -> int:
    """A stored map this old is rebuilt, whatever its version says: half a
    reconcile interval, so that it agrees with Postgres within one."""
    return max(1, int(settings.RECONCILE_INTERVAL_SECONDS * 500))


def _now_ms() -> int:
    return int(time.time() * 1000)


_store: SeatMapStore | None = None


def seat_map_store() -> SeatMapStore:
    global _store
    if _store is None:
        _store = SeatMapStore()
    return _store


@dataclass(frozen=True)
class SeatMapBody:
    """The rendered map: gzipped (as cached) and/or plain JSON (as just built
    without Redis); the other form on demand."""

    gzipped: bytes = b""
    plain: bytes = b""

    def json(self) -> bytes:
        return self.plain or gzip.decompress(self.gzipped)


# The claim status that makes a held seat sold: the claims app's CONFIRMED,
# given at start-up (claims.apps), since inventory imports no app above it.
_sold_claim_status: str | None = None


def seat_map_sold_status_set(status: str) -> None:
    global _sold_claim_status
    _sold_claim_status = status


def seat_map_read(*, event_id: uuid.UUID | str, tier_id: uuid.UUID) -> SeatMapBody:
    """The seat map of a reserved tier: ``{"tier_id", "version", "seats":
    [...]}``, each seat with its status."""
    store = seat_map_store()
    got = store.read(event_id=event_id, tier_id=tier_id)
    if got is None:  # Redis unreachable: Postgres alone
        return SeatMapBody(plain=_render(tier_id, _now_ms()))
    stored, version, rebuild = got
    if stored is not None and not rebuild:
        # Current, or someone else is rebuilding it.
        return SeatMapBody(gzipped=base64.b64decode(stored.rpartition(":")[2]))
    if version is None:  # no map, no version yet, and another caller builds the first
        version = store.bump(event_id=event_id, tier_id=tier_id)
        if version is None:
            return SeatMapBody(plain=_render(tier_id, _now_ms()))
    plain = _render(tier_id, version)
    if not rebuild:
        return SeatMapBody(plain=plain)
    gzipped = gzip.compress(plain, compresslevel=GZIP_LEVEL, mtime=0)
    stored_body = base64.b64encode(gzipped).decode()
    store.write(event_id=event_id, tier_id=tier_id, version=version, body=stored_body)
    return SeatMapBody(gzipped=gzipped, plain=plain)


def seat_map_json(*, event_id: uuid.UUID | str, tier_id: uuid.UUID) -> str:
    """``seat_map_read`` as a JSON string."""
    body = seat_map_read(event_id=event_id, tier_id=tier_id)
    return body.json().decode()


def _render(tier_id: uuid.UUID, version: int) -> bytes:
    if _sold_claim_status is None:
        raise RuntimeError("No claim status sells a seat: the claims app gives it at start-up")
    seats = tier_seat_statuses(tier_id=tier_id, sold_claim_status=_sold_claim_status)
    return json.dumps(
        {"tier_id": str(tier_id), "version": version, "seats": seats}, separators=(",", ":")
    ).encode()


def seats_changed_on_commit(
    *, event_id: uuid.UUID | str, tier_id: uuid.UUID | str, changes: Sequence[SeatChange]
) -> None:
    """Once the transaction that changed these seats commits: the seat map's
    version moves on (its cached copy is rebuilt on the next read) and
    ``seats_changed`` tells the apps above (the live seat map)."""
    if not changes:
        return

    def announce() -> None:
        version = seat_map_store().bump(event_id=event_id, tier_id=tier_id)
        seats_changed.send(
            sender=Ticket,
            event_id=event_id,
            tier_id=tier_id,
            changes=[{"label": c.label, "status": c.status.value} for c in changes],
            version=version,
        )

    transaction.on_commit(announce, robust=True)


def seat_map_changed(*, event_id: uuid.UUID | str, tier_id: uuid.UUID | str) -> None:
    """The whole map changed (generated, imported): a new version, after
    commit; no deltas (a client reloads the map when the version jumps)."""
    transaction.on_commit(
        lambda: seat_map_store().bump(event_id=event_id, tier_id=tier_id), robust=True
    )
