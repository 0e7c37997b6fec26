"""Redis from Postgres: rebuild after a wipe, and the periodic reconciliation."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from console.services import redis_rebuild
from queueing import services
from queueing.models import QueueEntry
from queueing.store import queue_store
from tests.support.sales import join, make_event

pytestmark = pytest.mark.django_db


def snapshot(event) -> tuple[list, list, str | None]:
    store = queue_store()
    return (
        store.r.zrange(store.waiting_key(event.id), 0, -1, withscores=True),
        store.r.zrange(store.admitted_key(event.id), 0, -1, withscores=True),
        store.r.get(store.served_key(event.id)),
    )


@pytest.fixture
def busy_event():
    """50 joined, 10 admitted, 2 left the line."""
    event = make_event(tickets=10)
    customers = [join(event)[0] for _ in range(50)]
    services.admission_tick_event(event_id=event.id)
    for customer in customers[20:22]:
        services.queue_abandon(event_id=event.id, customer_id=customer.id)
    return event


def test_flushall_then_rebuild_gives_back_the_exact_order_and_admitted_set(busy_event, redis_clean):
    before = snapshot(busy_event)
    assert (len(before[0]), len(before[1]), before[2]) == (38, 10, "10")
    redis_clean.flushall()
    assert snapshot(busy_event) == ([], [], None)
    report = services.queue_rebuild(event_id=busy_event.id)
    assert (report["waiting_added"], report["admitted_added"]) == (38, 10)
    assert snapshot(busy_event) == before


def test_rebuild_with_a_joiner_already_back_still_restores_everyone(busy_event, redis_clean):
    """Redis was wiped and one customer joined before the rebuild ran: the
    set exists but is short; the rebuild fills it."""
    before = snapshot(busy_event)
    redis_clean.flushall()
    newcomer, _ = join(busy_event)
    services.queue_rebuild(event_id=busy_event.id)
    waiting = snapshot(busy_event)[0]
    assert waiting[:-1] == before[0]
    assert waiting[-1][0] == str(newcomer.id)


def test_rebuild_touches_nothing_when_redis_is_complete(busy_event):
    before = snapshot(busy_event)
    report = services.queue_rebuild(event_id=busy_event.id)
    assert (report["waiting_added"], report["admitted_added"]) == (0, 0)
    assert snapshot(busy_event) == before


def test_the_management_command_and_worker_start_rebuild(busy_event, redis_clean):
    before = snapshot(busy_event)
    redis_clean.flushall()
    out = StringIO()
    call_command("rebuild_redis", "--event", str(busy_event.id), stdout=out)
    report = json.loads(out.getvalue())
    assert report[str(busy_event.id)]["queue"]["waiting_added"] == 38
    assert snapshot(busy_event) == before
    redis_clean.flushall()
    redis_rebuild()
    assert snapshot(busy_event) == before


def test_reconcile_is_cheap_when_nothing_diverged(busy_event, django_assert_num_queries):
    services.queue_reconcile_event(event_id=busy_event.id)  # the periodic full pass
    with django_assert_num_queries(2):  # COUNT waiting, COUNT admitted
        report = services.queue_reconcile_event(event_id=busy_event.id)
    assert report == {"waiting_added": 0, "admitted_added": 0, "dropped": 0}


def test_reconcile_re_adds_missing_and_drops_stale_members(busy_event):
    store = queue_store()
    before = snapshot(busy_event)
    waiting = [m for m, _ in before[0]]
    store.r.zrem(store.waiting_key(busy_event.id), waiting[5], waiting[6])  # lost writes
    store.r.zadd(store.waiting_key(busy_event.id), {"ghost-who-left": 1})  # stale
    abandoned = QueueEntry.objects.filter(event=busy_event, status="ABANDONED").first()
    store.r.zadd(store.waiting_key(busy_event.id), {str(abandoned.customer_id): abandoned.score})
    admitted = [m for m, _ in before[1]]
    store.r.zrem(store.admitted_key(busy_event.id), admitted[0])
    # Same sizes as Postgres: only the periodic full pass can see this.
    report = services.queue_reconcile_event(event_id=busy_event.id, full=False)
    assert report == {"waiting_added": 0, "admitted_added": 10, "dropped": 0}
    report = services.queue_reconcile_event(event_id=busy_event.id)
    assert report["dropped"] == 2
    assert snapshot(busy_event) == before


def test_reconcile_task_runs(busy_event):
    from queueing.tasks import queue_reconcile

    store = queue_store()
    store.r.delete(store.waiting_key(busy_event.id))
    assert queue_reconcile.apply().get() == 1
    assert store.r.zcard(store.waiting_key(busy_event.id)) == 38
