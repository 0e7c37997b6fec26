"""A reserve whose reply is lost (a timeout) is sent again by redis-py's
retry, on a new connection, with the same arguments. The retry is the same
call, not a second claimer: it answers as the first run did, takes the
tickets once, and is not refused by the claimer's own lock."""

from __future__ import annotations

import time

import pytest

from claims.models import Claim
from claims.services.claiming import CLAIM_LOCK_TTL_MS, LOCKED, claim_lock_key
from fairqueue.redis import get_redis
from inventory.store import InventoryStore, inventory_store
from tests.claims.conftest import lose_script_reply
from tests.support.sales import (
    admit_directly,
    claim_one,
    counter,
    in_flight,
    make_customers,
    on_sale,
)

pytestmark = pytest.mark.django_db(transaction=True)


def reserve_args(tier, *, lock_token: str | None):
    """One reserve call as redis-py sends it (and sends it again on a retry)."""
    store = inventory_store()
    keys = [store.counter_key(tier.event_id, tier.id), store.inflight_key(tier.event_id, tier.id)]
    args: list[object] = [2, "r1", int(time.time() * 1000)]
    if lock_token is not None:
        keys.append(claim_lock_key(tier.event_id, "c1"))
        args += [lock_token, CLAIM_LOCK_TTL_MS]
    return {"keys": keys, "args": args}


@pytest.mark.parametrize("lock_token", ["t1", None], ids=["with the claim lock", "without"])
def test_the_same_reserve_sent_twice_takes_the_tickets_once(lock_token):
    tier = on_sale(tickets=10)
    reserve = inventory_store().scripts["reserve"]
    call = reserve_args(tier, lock_token=lock_token)

    first = reserve(**call)
    again = reserve(**call)

    assert (first, again) == (8, 8)
    assert counter(tier) == 8
    assert in_flight(tier) == ["r1:2"]


def test_another_claimer_of_the_customer_is_still_refused_by_the_lock():
    tier = on_sale(tickets=10)
    reserve = inventory_store().scripts["reserve"]
    assert reserve(**reserve_args(tier, lock_token="t1")) == 8

    other = reserve_args(tier, lock_token="t2")
    other["args"][1] = "r2"
    assert reserve(**other) == LOCKED
    assert counter(tier) == 8
    assert in_flight(tier) == ["r1:2"]


def test_a_claim_whose_reserve_reply_is_lost_is_made_once(lossy):
    tier = on_sale(tickets=10)
    buyer = admit_directly(tier.event, make_customers(1))[0]
    lose_script_reply(lossy, InventoryStore().scripts["reserve"])

    claim = claim_one(tier, buyer)

    assert lossy.lost == 1  # the first reply never came: redis-py sent the script again
    assert Claim.objects.get(customer=buyer.customer).pk == claim.pk
    assert counter(tier) == 9
    assert in_flight(tier) == []
    assert get_redis().exists(claim_lock_key(tier.event_id, buyer.customer.id)) == 0
