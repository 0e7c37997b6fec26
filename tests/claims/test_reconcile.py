"""inventory_reconcile: Redis counters back to Postgres truth within one
tick, whatever a crash left behind (invariants 2, 3, 4), without ever
counting a committed claim twice."""

from __future__ import annotations

import logging

import pytest

from claims.domain import ReleaseReason
from claims.models import Claim
from claims.services import claim_release
from events import tasks
from events.models import Event
from events.services import inventory_reconcile
from fairqueue.faults import InjectedFault, fault_armed
from fairqueue.locks import SKIPPED, task_lock
from fairqueue.redis import get_redis
from inventory import store as inventory_store_module
from inventory.models import Ticket
from inventory.store import inventory_store
from tests.support.metrics import heals
from tests.support.sales import (
    admit_directly,
    claim_one,
    counter,
    in_flight,
    make_customers,
    on_sale,
)

pytestmark = pytest.mark.django_db
# Tests that need real commits (after-commit work, the REPEATABLE READ
# snapshot of the sync) run outside the test transaction.
committing = pytest.mark.django_db(transaction=True)


@pytest.fixture
def faults(fault_hooks):
    """Armed fault points fire."""


def free_in_postgres(tier) -> int:
    return Ticket.objects.filter(tier=tier, claim__isnull=True).count()


def test_fault_points_do_nothing_unless_enabled():
    tier = on_sale(tickets=10)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    with fault_armed("claim_create.after_commit"):
        claim_one(tier, buyer)  # fault hooks are off by default
    assert in_flight(tier) == []


@committing
def test_crash_between_commit_and_redis_heals_within_one_reconcile(faults):
    tier = on_sale(tickets=10)
    crashed, *others = admit_directly(tier.event, make_customers(10))
    with fault_armed("claim_create.after_commit"), pytest.raises(InjectedFault):
        claim_one(tier, crashed)

    # What the crash left: the claim committed, its reservation never finished.
    assert Claim.objects.filter(customer=crashed.customer).count() == 1
    assert free_in_postgres(tier) == 9
    assert counter(tier) == 9
    assert len(in_flight(tier)) == 1
    # A sync that trusted the stale reservation would hide a free ticket:
    store = inventory_store()
    assert store.sync(
        event_id=tier.event_id, tier_id=tier.id, free_in_postgres=9, returned_before=0
    ) == (9, 8)

    report = inventory_reconcile()

    assert counter(tier) == 9 == free_in_postgres(tier)
    assert in_flight(tier) == []
    assert report.healed == [(str(tier.event_id), str(tier.id), 9, 8, 9)]
    # All nine remaining tickets can be sold, and not one more.
    results = []
    for admitted in others:
        results.append(claim_one(tier, admitted))
    assert len(results) == 9
    assert free_in_postgres(tier) == 0
    assert counter(tier) == 0
    assert Event.objects.get(pk=tier.event_id).status == "SOLD_OUT"


def test_a_process_dying_before_commit_stops_hiding_tickets_once_its_reservation_ages(
    monkeypatch,
):
    tier = on_sale(tickets=10)
    # A claim reserved in Redis and died before its transaction: nothing in
    # Postgres, one ticket held by the dead reservation.
    inventory_store().reserve(event_id=tier.event_id, tier_id=tier.id, quantity=1)
    assert counter(tier) == 9
    inventory_reconcile()
    # Still young: it may be a live claim about to commit, so it stays counted.
    assert counter(tier) == 9
    monkeypatch.setattr(inventory_store_module, "RESERVATION_MAX_AGE_MS", 0)
    inventory_reconcile()
    assert counter(tier) == 10 == free_in_postgres(tier)
    assert in_flight(tier) == []


def test_a_live_reservation_is_counted_once_whatever_it_ends_with():
    tier = on_sale(tickets=10)
    store = inventory_store()
    _, live = store.reserve(event_id=tier.event_id, tier_id=tier.id, quantity=2)
    inventory_reconcile()
    assert counter(tier) == 8  # Postgres 10, minus 2 in flight
    store.finish(live, give_back=True)  # its claim failed
    assert counter(tier) == 10 == free_in_postgres(tier)


def test_an_exception_after_the_reservation_gives_the_tickets_back(faults):
    tier = on_sale(tickets=10)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    with fault_armed("claim_create.after_reserve"), pytest.raises(InjectedFault):
        claim_one(tier, buyer)
    assert Claim.objects.count() == 0
    assert counter(tier) == 10
    assert in_flight(tier) == []


@committing
def test_crash_between_release_commit_and_redis_heals_within_one_reconcile(faults):
    tier = on_sale(tickets=1)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    claim = claim_one(tier, buyer)
    assert Event.objects.get(pk=tier.event_id).status == "SOLD_OUT"
    # The after-commit work dies (logged: the release itself is committed
    # and answered as done).
    with fault_armed("claim_release.after_commit"):
        claim_release(claim_id=claim.pk, reason=ReleaseReason.CUSTOMER)
    assert Claim.objects.get(pk=claim.pk).status == "RELEASED"
    assert free_in_postgres(tier) == 1
    assert counter(tier) == 0  # Redis missed the give-back
    assert Event.objects.get(pk=tier.event_id).status == "SOLD_OUT"

    report = inventory_reconcile()

    assert counter(tier) == 1
    assert Event.objects.get(pk=tier.event_id).status == "ACTIVE"
    assert report.back_on_sale == [str(tier.event_id)]


def test_flushed_and_inflated_counters_are_healed_and_logged(caplog):
    """A missing counter (Redis wiped) is routine: INFO. A counter that
    disagreed is real divergence: WARNING. Both are counted by kind."""
    small, big = on_sale(tickets=3), on_sale(tickets=50)
    get_redis().delete(inventory_store().counter_key(small.event_id, small.id))
    get_redis().set(inventory_store().counter_key(big.event_id, big.id), 10_000)
    before = {k: heals(k) for k in ("inventory_rebuilt", "inventory_divergence")}
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="inventory.services"):
        report = inventory_reconcile()
    assert counter(small) == 3
    assert counter(big) == 50
    assert sorted(h[2:] for h in report.healed) == [(3, -1, 3), (50, 10_000, 50)]
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if "inventory" in r.getMessage()]
    assert len(lines) == 2
    assert ("INFO", f"inventory inventory_rebuilt event={small.event_id} tier={small.id} "
            "postgres_free=3 redis_before=-1 redis_after=3") in lines  # fmt: skip
    assert any(
        level == "WARNING" and "postgres_free=50 redis_before=10000 redis_after=50" in m
        for level, m in lines
    )
    assert heals("inventory_rebuilt") == before["inventory_rebuilt"] + 1
    assert heals("inventory_divergence") == before["inventory_divergence"] + 1


def test_reconcile_leaves_agreeing_counters_alone():
    tier = on_sale(tickets=5)
    report = inventory_reconcile()
    assert report.healed == []
    assert counter(tier) == 5


def test_reconcile_marks_a_sold_out_event_that_redis_missed():
    tier = on_sale(tickets=1)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    get_redis().set(inventory_store().counter_key(tier.event_id, tier.id), 10_000)
    claim_one(tier, buyer)
    # Redis said 9,999 left, so the claim did not ask Postgres.
    assert Event.objects.get(pk=tier.event_id).status == "ACTIVE"
    report = inventory_reconcile()
    assert report.sold_out == [str(tier.event_id)]
    assert Event.objects.get(pk=tier.event_id).status == "SOLD_OUT"
    assert counter(tier) == 0


def test_flushing_all_of_redis_is_healed_by_one_reconcile():
    tier = on_sale(tickets=10)
    buyers = admit_directly(tier.event, make_customers(3))
    for admitted in buyers:
        claim_one(tier, admitted)
    get_redis().flushdb()
    inventory_reconcile()
    assert counter(tier) == 7 == free_in_postgres(tier)


def test_the_reconcile_task_is_single_flight():
    tier = on_sale(tickets=10)
    get_redis().set(inventory_store().counter_key(tier.event_id, tier.id), 10_000)
    with task_lock("inventory_reconcile", ttl_s=10) as held:
        assert held is not None
        assert tasks.inventory_reconcile() == SKIPPED
    assert counter(tier) == 10_000
    result = tasks.inventory_reconcile()
    assert result["healed"] == [(str(tier.event_id), str(tier.id), 10, 10_000, 10)]
    assert counter(tier) == 10
