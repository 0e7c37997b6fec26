"""The Redis side of a claim (inventory.store, extended for claims):
reservation, optional claim lock in the same round trip, and finishing."""

from __future__ import annotations

import pytest

from claims.services.claiming import claim_lock_key
from fairqueue.redis import get_redis
from inventory.store import inventory_store
from tests.support.sales import counter, in_flight, on_sale

pytestmark = pytest.mark.django_db


def test_reserve_takes_the_lock_and_finish_releases_it():
    tier = on_sale(tickets=3)
    lock = claim_lock_key(tier.event_id, "someone")  # in the event's hash slot
    store = inventory_store()
    left, res = store.reserve(
        event_id=tier.event_id,
        tier_id=tier.id,
        quantity=2,
        lock_key=lock,
        lock_token="mine",
        lock_ttl_ms=5000,
    )
    assert left == 1
    assert get_redis().get(lock) == "mine"
    assert 0 < get_redis().pttl(lock) <= 5000
    assert in_flight(tier) == [f"{res.id}:2"]
    store.finish(res, give_back=False, lock_key=lock, lock_token="mine")
    assert get_redis().get(lock) is None
    assert in_flight(tier) == []
    assert counter(tier) == 1


def test_a_held_lock_is_minus_3_and_reserves_nothing():
    tier = on_sale(tickets=3)
    lock = claim_lock_key(tier.event_id, "someone")  # in the event's hash slot
    get_redis().set(lock, "theirs")
    left, _ = inventory_store().reserve(
        event_id=tier.event_id,
        tier_id=tier.id,
        quantity=1,
        lock_key=lock,
        lock_token="mine",
        lock_ttl_ms=5000,
    )
    assert left == -3
    assert counter(tier) == 3
    assert in_flight(tier) == []
    assert get_redis().get(lock) == "theirs"


def test_sold_out_and_cache_miss_keep_the_lock_for_the_caller_to_release():
    tier = on_sale(tickets=1)
    lock = claim_lock_key(tier.event_id, "someone")  # in the event's hash slot
    store = inventory_store()
    left, _ = store.reserve(
        event_id=tier.event_id,
        tier_id=tier.id,
        quantity=2,
        lock_key=lock,
        lock_token="mine",
        lock_ttl_ms=5000,
    )
    assert left == -2
    assert get_redis().get(lock) == "mine"
    get_redis().delete(lock, store.counter_key(tier.event_id, tier.id))
    left, _ = store.reserve(
        event_id=tier.event_id,
        tier_id=tier.id,
        quantity=1,
        lock_key=lock,
        lock_token="mine",
        lock_ttl_ms=5000,
    )
    assert left == -1
    assert get_redis().get(lock) == "mine"


def test_finish_never_releases_someone_elses_lock():
    tier = on_sale(tickets=3)
    lock = claim_lock_key(tier.event_id, "someone")  # in the event's hash slot
    store = inventory_store()
    _, res = store.reserve(event_id=tier.event_id, tier_id=tier.id, quantity=1)
    get_redis().set(lock, "theirs")  # ours expired and someone else took it
    store.finish(res, give_back=True, lock_key=lock, lock_token="mine")
    assert get_redis().get(lock) == "theirs"
    assert counter(tier) == 3


def test_give_back_happens_once_even_if_finish_is_repeated():
    tier = on_sale(tickets=3)
    store = inventory_store()
    _, res = store.reserve(event_id=tier.event_id, tier_id=tier.id, quantity=2)
    store.finish(res, give_back=True)
    store.finish(res, give_back=True)
    assert counter(tier) == 3
