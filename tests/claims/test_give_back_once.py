"""A release gives its tickets back to the Redis counter once: a second
release of the same claim (a retried task, a customer racing the expiry
sweep) frees no row in Postgres and gives nothing back, and the give-back
script, sent again by redis-py when its reply was lost to a timeout, adds
nothing the second time. Redis never shows more free tickets than Postgres
has."""

from __future__ import annotations

import pytest

from claims.domain import ReleaseReason
from claims.services import claim_release, claims_expire
from inventory.models import Ticket
from inventory.store import GIVE_BACK_MARK_MS, InventoryStore, inventory_store
from tests.claims.conftest import lose_script_reply
from tests.support.races import race
from tests.support.sales import admit_directly, claim_one, counter, expire, make_customers, on_sale

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_same_give_back_sent_twice_gives_the_tickets_back_once():
    tier = on_sale(tickets=10)
    buyer = admit_directly(tier.event, make_customers(1))[0]
    claim_one(tier, buyer)
    store = inventory_store()
    give_back = store.scripts["give_back"]
    call = {
        "keys": [
            store.counter_key(tier.event_id, tier.id),
            store.returned_key(tier.event_id),
            store.committed_key(tier.event_id, tier.id),
            store.give_back_key(tier.event_id, "g1"),
        ],
        "args": [1, str(tier.id), GIVE_BACK_MARK_MS],
    }

    first = give_back(**call)
    again = give_back(**call)

    assert (first, again) == (10, 10)
    assert counter(tier) == 10
    assert store.returned(event_id=tier.event_id) == {str(tier.id): 1}


def test_a_release_whose_give_back_reply_is_lost_gives_the_tickets_back_once(lossy):
    tier = on_sale(tickets=10)
    buyer = admit_directly(tier.event, make_customers(1))[0]
    claim = claim_one(tier, buyer)
    assert counter(tier) == 9
    lose_script_reply(lossy, InventoryStore().scripts["give_back"])

    claim_release(claim_id=claim.pk, reason=ReleaseReason.CUSTOMER)

    assert lossy.lost == 1  # redis-py sent the give-back again
    assert counter(tier) == 10
    assert inventory_store().returned(event_id=tier.event_id) == {str(tier.id): 1}


def test_a_customer_and_the_expiry_sweep_releasing_at_once_give_back_once():
    tier = on_sale(tickets=10)
    buyers = admit_directly(tier.event, make_customers(5))
    for buyer in buyers:
        held = claim_one(tier, buyer)
        expire(held)

        def release(who: str, claim_id=held.pk):
            if who == "sweep":
                return claims_expire()
            return claim_release(claim_id=claim_id, reason=ReleaseReason.CUSTOMER)

        race(release, ["customer", "sweep", "customer"])

    free = Ticket.objects.filter(tier=tier, claim__isnull=True).count()
    assert free == 10
    assert counter(tier) == free
    assert inventory_store().returned(event_id=tier.event_id) == {str(tier.id): 5}
