"""The cached seat map agrees with Postgres within one reconcile interval
after any Redis fault, on real Redis: a version bump lost with its command,
an older snapshot of the map and its version restored, the version key wiped
or restored older than the map. Between faults a read stays one Redis round
trip with no Postgres query."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from claims.domain import ReleaseReason
from claims.services import claim_release
from fairqueue.redis import get_redis, make_client
from inventory.seating import seatmap
from inventory.seating.seatmap import SeatMapStore, seat_map_json, seat_map_store
from tests.support.sales import admit_directly, claim_seats, make_customers, on_sale_reserved

pytestmark = pytest.mark.django_db(transaction=True)

INTERVAL = 2.0  # RECONCILE_INTERVAL_SECONDS for these tests


@pytest.fixture
def tier(settings, monkeypatch):
    settings.RECONCILE_INTERVAL_SECONDS = INTERVAL
    # Reads here follow changes at once: no rebuild throttle unless a test sets one.
    monkeypatch.setattr(seatmap, "REBUILD_EVERY_MS", 1)
    return on_sale_reserved(rows=1, seats_per_row=4, max_tickets_per_customer=2)


def seat_status(tier, label: str = "A-1") -> str:
    body = seat_map_json(event_id=tier.event_id, tier_id=tier.id)
    return next(s["status"] for s in json.loads(body)["seats"] if s["label"] == label)


def one_interval_later() -> None:
    time.sleep(INTERVAL)


@contextmanager
def bumps_lost(closed_port: int) -> Iterator[None]:
    """The seat map's commands fail for real (a Redis nobody listens on)."""
    real = seatmap._store
    seatmap._store = SeatMapStore(client=make_client(f"redis://127.0.0.1:{closed_port}/0"))
    try:
        yield
    finally:
        seatmap._store = real


def snapshot(keys: list[str]) -> dict[str, tuple[bytes, int]]:
    """What an RDB snapshot keeps of ``keys``: each value, and when it
    expires (ms since the epoch; 0: never)."""
    raw = raw_client()
    now_ms = int(time.time() * 1000)
    saved = {}
    for key in keys:
        ttl = raw.pttl(key)
        if ttl != -2:  # the key exists
            saved[key] = (raw.dump(key), now_ms + ttl if ttl > 0 else 0)
    return saved


def restore(saved: dict[str, tuple[bytes, int]]) -> None:
    """The snapshot loaded back: values and expiry times as they were."""
    raw = raw_client()
    for key, (value, expires_at) in saved.items():
        raw.restore(key, expires_at, value, replace=True, absttl=expires_at > 0)


def raw_client():
    """A client of the same Redis that does not decode replies (a DUMP is bytes)."""
    kwargs = get_redis().connection_pool.connection_kwargs
    return type(get_redis())(host=kwargs["host"], port=kwargs["port"], db=kwargs["db"])


@pytest.fixture
def held(tier):
    """A-1 held by a claim, and the map read (cached) showing it."""
    buyer = admit_directly(tier.event, make_customers(1))[0]
    claim = claim_seats(tier, buyer, ["A-1"])
    assert seat_status(tier) == "held"
    return claim


def test_a_lost_bump_shows_for_at_most_one_interval(tier, held, closed_port):
    with bumps_lost(closed_port):
        claim_release(claim_id=held.pk, reason=ReleaseReason.CUSTOMER)

    assert seat_status(tier) == "held"  # the cache does not know yet (cheap reads)
    one_interval_later()
    assert seat_status(tier) == "available"


def test_an_older_snapshot_restored_shows_for_at_most_one_interval(tier, held):
    saved = snapshot(seat_map_store().keys(tier.event_id, tier.id)[:2])
    claim_release(claim_id=held.pk, reason=ReleaseReason.CUSTOMER)
    assert seat_status(tier) == "available"

    restore(saved)  # the map and its version, as they were while A-1 was held

    one_interval_later()
    assert seat_status(tier) == "available"


def test_a_version_key_restored_older_than_the_map_is_healed_by_the_first_rebuild(
    tier, held, monkeypatch
):
    version_key = seat_map_store().keys(tier.event_id, tier.id)[1]
    saved = snapshot([version_key])  # the version the held map was built at
    buyer = admit_directly(tier.event, make_customers(1))[0]
    claim_seats(tier, buyer, ["A-2"])
    assert seat_status(tier, "A-2") == "held"  # a newer map, A-1 and A-2 held
    claim_release(claim_id=held.pk, reason=ReleaseReason.CUSTOMER)
    restore(saved)  # the version key goes back, below the stored map's
    monkeypatch.setattr(seatmap, "REBUILD_EVERY_MS", 1000)

    first = seat_status(tier)  # the reader that rebuilds
    second = seat_status(tier)  # the next one, inside the rebuild throttle
    assert (first, second) == ("available", "available")


def test_a_wiped_version_key_is_rebuilt_at_once(tier, held, closed_port):
    with bumps_lost(closed_port):
        claim_release(claim_id=held.pk, reason=ReleaseReason.CUSTOMER)
    get_redis().delete(seat_map_store().keys(tier.event_id, tier.id)[1])

    assert seat_status(tier) == "available"


def test_a_current_map_is_one_round_trip_and_no_query(tier, held, django_assert_num_queries):
    seat_status(tier)
    with django_assert_num_queries(0):
        assert seat_status(tier) == "held"
