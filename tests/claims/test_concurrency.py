"""Invariants 1 and 6 under real concurrency: threads, real Postgres, real
Redis. Each guard is first shown missing (the race happens), then holding."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from django.db import connection

from claims.models import Claim
from claims.selectors import tier_tickets_held
from claims.services import claim_create
from claims.services import claiming as claiming_module
from events.models import Event
from fairqueue.errors import AppError
from fairqueue.redis import get_redis
from inventory.models import Ticket
from inventory.store import inventory_store
from tests.support.races import race
from tests.support.sales import admit_directly, counter, in_flight, make_customers, on_sale

pytestmark = pytest.mark.django_db(transaction=True)


def claim_until_answered(tier, admitted, *, retries: int = 50):
    """A well-behaved client: 503 busy means "retry shortly"."""
    for _ in range(retries):
        try:
            return claim_create(
                event_id=tier.event_id,
                customer_id=admitted.customer.id,
                admission_token=admitted.token,
                tier_id=tier.id,
                quantity=1,
            )
        except AppError as exc:
            if exc.code != "busy":
                return exc
            time.sleep(0.01)
    raise AssertionError("still busy after retries")


def outcome(results) -> Counter:
    return Counter(r.code if isinstance(r, AppError) else type(r).__name__ for r in results)


def inflate(tier, value: int = 10_000) -> None:
    get_redis().set(inventory_store().counter_key(tier.event_id, tier.id), value)


def assert_exactly_sold(tier, n: int) -> None:
    assert Claim.objects.filter(tier=tier).count() == n
    assert tier_tickets_held(tier_id=tier.id) == n
    assert Ticket.objects.filter(tier=tier, claim__isnull=False).count() == n
    assert Claim.objects.filter(tier=tier).values("customer").distinct().count() == n
    # Every claim holds exactly its own quantity of ticket rows.
    for claim in Claim.objects.filter(tier=tier):
        assert Ticket.objects.filter(claim=claim).count() == claim.quantity


def test_300_admitted_customers_race_for_100_tickets():
    tier = on_sale(tickets=100)
    buyers = admit_directly(tier.event, make_customers(300))
    results = race(lambda a: claim_until_answered(tier, a), buyers)
    assert outcome(results) == {"Claim": 100, "sold_out": 200}
    assert_exactly_sold(tier, 100)
    assert counter(tier) == 0
    assert in_flight(tier) == []
    assert Event.objects.get(pk=tier.event_id).status == "SOLD_OUT"


def test_inflated_counter_oversells_without_the_postgres_guard(monkeypatch):
    """The seed design: the Redis counter is the only gate. Inflated (as its
    reconciliation could do), it lets everyone through."""
    monkeypatch.setattr(claiming_module, "TICKET_GUARD", False)
    tier = on_sale(tickets=100)
    inflate(tier)
    buyers = admit_directly(tier.event, make_customers(300))
    results = race(lambda a: claim_until_answered(tier, a), buyers)
    assert outcome(results) == {"Claim": 300}
    assert tier_tickets_held(tier_id=tier.id) == 300  # 200 tickets that do not exist


def test_inflated_counter_cannot_oversell_with_the_postgres_guard():
    assert claiming_module.TICKET_GUARD is True
    tier = on_sale(tickets=100)
    inflate(tier)
    buyers = admit_directly(tier.event, make_customers(300))
    results = race(lambda a: claim_until_answered(tier, a), buyers)
    assert outcome(results) == {"Claim": 100, "sold_out": 200}
    assert_exactly_sold(tier, 100)
    # Every refused claim gave its reservation back: 10,000 - 100 kept.
    assert counter(tier) == 9_900
    assert in_flight(tier) == []
    assert Event.objects.get(pk=tier.event_id).status == "SOLD_OUT"


def test_redis_flushed_again_and_again_during_the_race_still_sells_exactly_100():
    tier = on_sale(tickets=100)
    buyers = admit_directly(tier.event, make_customers(300))
    stop = threading.Event()

    def chaos() -> None:
        while not stop.is_set():
            get_redis().flushdb()
            time.sleep(0.005)

    flusher = threading.Thread(target=chaos)
    flusher.start()
    try:
        results = race(lambda a: claim_until_answered(tier, a), buyers)
    finally:
        stop.set()
        flusher.join()
    assert outcome(results) == {"Claim": 100, "sold_out": 200}
    assert_exactly_sold(tier, 100)


def test_one_customer_firing_20_parallel_claims_gets_exactly_one():
    tier = on_sale(tickets=10)
    buyer = admit_directly(tier.event, make_customers(1))[0]
    results = race(lambda _: claim_until_answered(tier, buyer), list(range(20)), threads=20)
    counts = outcome(results)
    assert counts["Claim"] == 1
    assert set(counts) <= {"Claim", "already_claimed", "claim_in_progress"}
    assert sum(counts.values()) == 20
    assert Claim.objects.filter(customer=buyer.customer).count() == 1
    assert Ticket.objects.filter(tier=tier, claim__isnull=False).count() == 1
    assert counter(tier) == 9
    assert in_flight(tier) == []


@pytest.fixture
def one_live_entry_rule_dropped():
    """Two ADMITTED entries for one customer are normally impossible (one
    live queue entry per customer and event); without that rule, the claim's
    partial unique index is the only guard left."""
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX queue_one_live_entry")
    yield
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE queueing_queueentry SET status = 'EXPIRED' "
            "WHERE status IN ('WAITING', 'ADMITTED')"
        )
        cursor.execute(
            "CREATE UNIQUE INDEX queue_one_live_entry ON queueing_queueentry "
            "(event_id, customer_id) WHERE status IN ('WAITING', 'ADMITTED')"
        )


def _claim_twice_with_two_admissions(tier):
    customer = make_customers(1)[0]
    first = admit_directly(tier.event, [customer])[0]
    second = admit_directly(tier.event, [customer])[0]
    return customer, [claim_until_answered(tier, first), claim_until_answered(tier, second)]


def test_without_the_unique_index_one_customer_buys_twice(one_live_entry_rule_dropped):
    tier = on_sale(tickets=10)
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX claim_one_purchase_per_event")
    try:
        customer, results = _claim_twice_with_two_admissions(tier)
        assert outcome(results) == {"Claim": 2}
        assert Claim.objects.filter(customer=customer).count() == 2
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM events_ticket WHERE claim_id IS NOT NULL")
            cursor.execute("DELETE FROM claims_claim")
            cursor.execute(
                "CREATE UNIQUE INDEX claim_one_purchase_per_event ON claims_claim "
                "(event_id, customer_id) WHERE status IN ('CLAIMED', 'CONFIRMED')"
            )


def test_the_unique_index_refuses_a_second_purchase(one_live_entry_rule_dropped):
    tier = on_sale(tickets=10)
    customer, results = _claim_twice_with_two_admissions(tier)
    assert outcome(results) == {"Claim": 1, "already_claimed": 1}
    assert Claim.objects.filter(customer=customer).count() == 1
    assert Ticket.objects.filter(tier=tier, claim__isnull=False).count() == 1
    assert counter(tier) == 9  # the refused claim gave its reservation back


def test_a_confirmed_purchase_also_counts_as_the_one_purchase(one_live_entry_rule_dropped):
    tier = on_sale(tickets=10)
    customer = make_customers(1)[0]
    first = admit_directly(tier.event, [customer])[0]
    made = claim_until_answered(tier, first)
    Claim.objects.filter(pk=made.pk).update(status="CONFIRMED")
    second = admit_directly(tier.event, [customer])[0]
    result = claim_until_answered(tier, second)
    assert isinstance(result, AppError) and result.code == "already_claimed"
    assert Claim.objects.filter(customer=customer).count() == 1
