"""console.invariants, Redis holds only what Postgres can rebuild (invariant
2): the counters, the waiting line's order and the admitted set must equal
Postgres once a sale is quiet; a wiped or wrong Redis fails the check until a
rebuild, and a Redis that is down is a failed check, not a crash."""

from __future__ import annotations

import uuid

import pytest
import redis

from console.services import redis_rebuild
from inventory import store as inventory_store_module
from inventory.store import InventoryStore
from queueing import services as queue_services
from queueing.store import QueueStore
from tests.support.factories import CustomerFactory
from tests.support.invariants import failing
from tests.support.sales import admit_directly, make_customers

pytestmark = pytest.mark.django_db

# --- invariant 2: Redis agrees with Postgres ----------------------------------------------


def test_a_wrong_counter_fails_redis_agreement(paid_sale, redis_clean):
    redis_clean.set(InventoryStore.counter_key(paid_sale.event.pk, paid_sale.regular.pk), 5)

    assert failing(paid_sale.event) == {}
    assert failing(paid_sale.event, settled=True) == {
        "redis_agrees": "Regular: counter 5 != 1 free in Postgres - 0 in flight"
    }
    assert failing(paid_sale.event, settled=True, redis=False) == {}


def test_a_flushed_redis_fails_until_it_is_rebuilt(paid_sale, redis_clean):
    customers = [CustomerFactory() for _ in range(3)]
    for customer in customers:
        queue_services.queue_join(event_id=paid_sale.event.pk, customer_id=customer.pk)
    admit_directly(paid_sale.event, make_customers(2))
    assert failing(paid_sale.event, settled=True) == {}

    redis_clean.flushdb()

    found = failing(paid_sale.event, settled=True)
    assert set(found) == {"redis_agrees"}
    assert found["redis_agrees"].startswith(
        "Regular: counter None != 1 free in Postgres - 0 in flight; "
        "VIP: counter None != 0 free in Postgres - 0 in flight; waiting line differs from "
        "position 1: Postgres has "
    )
    assert found["redis_agrees"].endswith(
        "Redis nothing (3 WAITING in Postgres); 2 ADMITTED entries missing from the admitted set"
    )

    redis_rebuild(event_id=paid_sale.event.pk)

    assert failing(paid_sale.event, settled=True) == {}


def test_the_waiting_line_in_another_order_fails_redis_agreement(paid_sale, redis_clean):
    customers = [CustomerFactory() for _ in range(3)]
    for customer in customers:
        queue_services.queue_join(event_id=paid_sale.event.pk, customer_id=customer.pk)
    key = QueueStore.waiting_key(paid_sale.event.pk)
    first, last = redis_clean.zrange(key, 0, 0)[0], redis_clean.zrange(key, -1, -1)[0]
    redis_clean.zadd(key, {first: redis_clean.zscore(key, last) + 1})  # first goes last

    found = failing(paid_sale.event, settled=True)

    assert set(found) == {"redis_agrees"}
    assert found["redis_agrees"].startswith("waiting line differs from position 1: Postgres has ")
    assert redis_clean.zcard(key) == 3  # same members: only the order is wrong


def test_an_admitted_member_postgres_does_not_know_fails_redis_agreement(paid_sale, redis_clean):
    redis_clean.zadd(QueueStore.admitted_key(paid_sale.event.pk), {str(uuid.uuid4()): 1})

    assert failing(paid_sale.event, settled=True) == {
        "redis_agrees": "1 member of the admitted set not ADMITTED"
    }


def test_redis_down_fails_redis_agreement_without_an_exception(paid_sale, monkeypatch):
    dead = redis.Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.2)
    monkeypatch.setattr(inventory_store_module, "_store", InventoryStore(client=dead))

    assert failing(paid_sale.event, settled=True) == {
        "redis_agrees": "Redis is unavailable: cannot compare"
    }
