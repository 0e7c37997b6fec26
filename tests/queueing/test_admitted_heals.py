"""An admitted customer reads ADMITTED, with a token that works, within one
admission tick, whatever stopped between a Postgres commit and the Redis
step after it (the fault points stand in for a killed process).

Every tick of a live event runs its Lua step, admitting or not, and finds
Redis' served counter behind Postgres' total when an admission never reached
Redis; it then moves every ADMITTED entry into the admitted set. That holds
when the tick admits nobody itself (the stopped tick took the last slots),
and when a lost and a stale member keep both sets' sizes equal, which the
reconciliation's cheap pass (sizes only) cannot see."""

from __future__ import annotations

import pytest
import redis

from claims.services import claim_create
from fairqueue.faults import InjectedFault, fault_armed
from queueing import services
from queueing import store as store_module
from queueing.services import admission as admission_module
from queueing.store import QueueStore, queue_store
from tests.support.factories import CustomerFactory
from tests.support.sales import admission_usable, join, make_event

pytestmark = pytest.mark.django_db


@pytest.fixture
def faults(fault_hooks):
    """Armed fault points fire."""


@pytest.fixture
def pushes(monkeypatch) -> list[tuple[str, dict]]:
    """Every push the tick sends (and sends on)."""
    sent: list[tuple[str, dict]] = []
    real = admission_module.send_many

    def recording(messages):
        sent.extend(messages)
        return real(messages)

    monkeypatch.setattr(admission_module, "send_many", recording)
    return sent


def tick(event):
    return services.admission_tick_event(event_id=event.id)


def position(event, customer):
    return services.queue_position(event_id=event.id, customer_id=customer.id)


def line(event) -> list[str]:
    store = queue_store()
    return store.r.zrange(store.waiting_key(event.id), 0, -1)


def admitted_set(event) -> set[str]:
    store = queue_store()
    return set(store.r.zrange(store.admitted_key(event.id), 0, -1))


def assert_admitted_with_a_working_token(event, customer) -> None:
    answer = position(event, customer)
    assert (answer.status, answer.position) == ("ADMITTED", None)
    admission_usable(event, customer, answer.admission_token)


def told_admitted(pushes, event) -> list[str]:
    return sorted(
        group
        for group, message in pushes
        if message["type"] == "admitted" and str(event.id) in group
    )


def test_a_tick_stopped_after_its_commit_is_healed_by_the_next_one_that_admits_nobody(
    faults, pushes
):
    event = make_event(tickets=2)
    tick(event)  # nobody waits yet: the event's first tick builds the line in Redis
    first, second, third = (join(event)[0] for _ in range(3))
    with fault_armed("queue.admit.after_commit"), pytest.raises(InjectedFault):
        tick(event)
    # Until the next tick Redis still has them in the line.
    assert (position(event, first).status, position(event, first).position) == ("WAITING", 1)
    pushes.clear()

    report = tick(event)

    assert_admitted_with_a_working_token(event, first)
    assert_admitted_with_a_working_token(event, second)
    assert (report.capacity, report.admitted, report.readmitted) == (0, 0, 2)
    assert (position(event, third).status, position(event, third).position) == ("WAITING", 1)
    assert line(event) == [str(third.id)]
    assert admitted_set(event) == {str(first.id), str(second.id)}
    assert queue_store().served(event_id=event.id) == 2
    # The two never heard of their admission: now they do, and nobody else.
    assert len(told_admitted(pushes, event)) == 2
    # Healed once: the tick after that finds Redis in step.
    assert tick(event).readmitted == 0


def test_a_tick_whose_redis_step_failed_is_healed_by_the_next_one(monkeypatch):
    event = make_event(tickets=2)
    tick(event)
    first, second = (join(event)[0] for _ in range(2))
    with monkeypatch.context() as down:
        dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
        down.setattr(store_module, "_store", QueueStore(client=dead))
        assert tick(event).skipped == "redis_unavailable"
    assert set(line(event)) == {str(first.id), str(second.id)}

    tick(event)

    assert_admitted_with_a_working_token(event, first)
    assert_admitted_with_a_working_token(event, second)
    assert line(event) == []
    assert admitted_set(event) == {str(first.id), str(second.id)}


def test_a_join_stopped_after_its_insert_is_admitted_by_the_next_tick(faults):
    event = make_event(tickets=2)
    tick(event)
    customer = CustomerFactory()
    with fault_armed("queue.join.after_insert"), pytest.raises(InjectedFault):
        services.queue_join(event_id=event.id, customer_id=customer.id)
    assert line(event) == []
    assert (position(event, customer).status, position(event, customer).position) == ("WAITING", 1)

    assert tick(event).admitted == 1

    assert_admitted_with_a_working_token(event, customer)
    assert admitted_set(event) == {str(customer.id)}


def test_lost_and_stale_members_that_keep_the_sizes_equal_are_healed_by_the_next_tick(faults):
    """A claim stopped after its commit leaves a stale admitted member; a tick
    stopped after its commit leaves an admitted customer in the line and out
    of the admitted set; a join stopped after its insert leaves a waiting
    customer out of the line. Both sets have Postgres' sizes."""
    event = make_event(tickets=5, admission_batch_size=1, max_active_admitted=1)
    tier = event.tiers.get()
    buyer, _ = join(event)
    assert tick(event).admitted == 1
    with fault_armed("claim_create.after_commit"), pytest.raises(InjectedFault):
        claim_create(
            event_id=event.id,
            customer_id=buyer.id,
            admission_token=position(event, buyer).admission_token,
            tier_id=tier.id,
            quantity=1,
        )
    admitted, _ = join(event)
    with fault_armed("queue.admit.after_commit"), pytest.raises(InjectedFault):
        tick(event)
    late = CustomerFactory()
    with fault_armed("queue.join.after_insert"), pytest.raises(InjectedFault):
        services.queue_join(event_id=event.id, customer_id=late.id)
    # Postgres: `admitted` ADMITTED, `late` WAITING. Redis: `admitted` in the
    # line, the buyer in the admitted set.
    assert (line(event), admitted_set(event)) == ([str(admitted.id)], {str(buyer.id)})
    assert services.queue_reconcile_event(event_id=event.id, full=False) == {
        "waiting_added": 0,
        "admitted_added": 0,
        "dropped": 0,
    }
    assert position(event, admitted).status == "WAITING"

    report = tick(event)

    assert_admitted_with_a_working_token(event, admitted)
    assert (report.capacity, report.readmitted) == (0, 1)
    assert (position(event, late).status, position(event, late).position) == ("WAITING", 1)
    assert position(event, buyer).status == "COMPLETED"
    # The sizes now differ, and the reconciliation's cheap pass does the rest.
    services.queue_reconcile_event(event_id=event.id, full=False)
    assert (line(event), admitted_set(event)) == ([str(late.id)], {str(admitted.id)})


def test_a_tick_stopped_while_it_heals_leaves_the_counter_behind_for_the_next_one(
    faults, monkeypatch
):
    event = make_event(tickets=2)
    tick(event)
    first, second = (join(event)[0] for _ in range(2))
    with fault_armed("queue.admit.after_commit"), pytest.raises(InjectedFault):
        tick(event)
    real = QueueStore.readmit

    def stopped(self, **kwargs):
        raise InjectedFault("stopped before the readmit reached Redis")

    monkeypatch.setattr(QueueStore, "readmit", stopped)
    with pytest.raises(InjectedFault):
        tick(event)
    assert queue_store().served(event_id=event.id) == 0  # still behind Postgres' 2
    monkeypatch.setattr(QueueStore, "readmit", real)

    assert tick(event).readmitted == 2

    assert_admitted_with_a_working_token(event, first)
    assert_admitted_with_a_working_token(event, second)
    assert queue_store().served(event_id=event.id) == 2
