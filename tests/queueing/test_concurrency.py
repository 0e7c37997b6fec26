"""Concurrency, with real threads on real Postgres and Redis."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection
from rest_framework.test import APIClient

from queueing import services
from queueing.models import QueueEntry
from queueing.services import admission, capacity
from queueing.store import queue_store
from tests.support.factories import CustomerFactory, bearer
from tests.support.sales import join, make_event

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 25


def _in_thread(fn):
    def run(*args):
        try:
            return fn(*args)
        finally:
            connection.close()

    return run


def test_200_concurrent_joins_get_places_1_to_200_without_gaps_or_duplicates():
    event = make_event(tickets=10)
    customers = CustomerFactory.create_batch(200)
    start = threading.Barrier(THREADS)

    @_in_thread
    def join_over_http(customer):
        if customer in customers[:THREADS]:
            start.wait(timeout=10)  # the first wave starts together
        response = APIClient().post(f"/api/v1/events/{event.id}/queue/", **bearer(customer))
        assert response.status_code == 201, response.content
        return customer.id, response.json()["position"]

    with ThreadPoolExecutor(THREADS) as pool:
        at_join = dict(pool.map(join_over_http, customers))

    assert QueueEntry.objects.filter(event=event, status="WAITING").count() == 200
    store = queue_store()
    assert store.r.zcard(store.waiting_key(event.id)) == 200
    now = {c.id: services.queue_position(event_id=event.id, customer_id=c.id) for c in customers}
    positions = sorted(p.position for p in now.values())
    assert positions == list(range(1, 201))
    # The order is the join order (score), the same in Postgres and Redis.
    by_score = list(
        QueueEntry.objects.filter(event=event)
        .order_by("score", "customer_id")
        .values_list("customer_id", flat=True)
    )
    assert [now[c].position for c in by_score] == list(range(1, 201))
    # The place given at join is exact at that instant: racers with an earlier
    # join time that reached Redis later can only push it back, never ahead.
    assert all(1 <= at_join[c] <= now[c].position for c in at_join)
    assert sorted(at_join.values())[0] == 1


def _slow_capacity(monkeypatch, seconds=0.5):
    """Both ticks count before either commits (if nothing stops them)."""
    real = capacity.admission_capacity

    def slow(**kwargs):
        time.sleep(seconds)
        return real(**kwargs)

    monkeypatch.setattr(capacity, "admission_capacity", slow)


def _two_ticks_at_once(event):
    start = threading.Barrier(2)

    @_in_thread
    def tick(_):
        start.wait(timeout=10)
        # Without the Redis lock: the Postgres guard alone must hold.
        return admission.admission_tick_event(event_id=event.id, use_lock=False).admitted

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(tick, range(2)))


def test_race_without_the_event_row_lock_over_admits(monkeypatch):
    """The guard switched off: two ticks both see 10 free tickets and nobody
    admitted, and admit 20 customers for 10 tickets."""
    event = make_event(tickets=10)
    for _ in range(30):
        join(event)
    _slow_capacity(monkeypatch)
    monkeypatch.setattr(
        admission,
        "_event_locked_for_admission",
        lambda event_id: admission.Event.objects.filter(pk=event_id).first(),
    )
    admitted = _two_ticks_at_once(event)
    assert admitted == [10, 10]
    assert QueueEntry.objects.filter(event=event, status="ADMITTED").count() == 20


def test_two_ticks_at_once_never_exceed_capacity(monkeypatch):
    event = make_event(tickets=10)
    for _ in range(30):
        join(event)
    _slow_capacity(monkeypatch)
    admitted = _two_ticks_at_once(event)
    assert sorted(admitted) == [0, 10]
    assert QueueEntry.objects.filter(event=event, status="ADMITTED").count() == 10
    store = queue_store()
    assert store.r.zcard(store.admitted_key(event.id)) == 10
    assert store.r.zcard(store.waiting_key(event.id)) == 20


def test_two_ticks_at_once_with_admitted_but_unclaimed_customers(monkeypatch):
    """7 already admitted and not claimed: only 3 more for 10 tickets, however
    many ticks run."""
    event = make_event(tickets=10, admission_batch_size=7)
    for _ in range(30):
        join(event)
    assert services.admission_tick_event(event_id=event.id).admitted == 7
    _slow_capacity(monkeypatch)
    admitted = _two_ticks_at_once(event)
    assert sorted(admitted) == [0, 3]
    assert QueueEntry.objects.filter(event=event, status="ADMITTED").count() == 10


def test_joins_are_not_blocked_by_a_running_tick(monkeypatch):
    """The tick locks the event row FOR NO KEY UPDATE: a join (whose foreign
    key takes FOR KEY SHARE on the same row) goes through meanwhile."""
    event = make_event(tickets=10)
    join(event)
    _slow_capacity(monkeypatch, seconds=1.5)
    ticking = threading.Thread(
        target=_in_thread(lambda: admission.admission_tick_event(event_id=event.id))
    )
    ticking.start()
    time.sleep(0.5)  # the tick now holds the event row lock
    started = time.perf_counter()
    join(event)
    elapsed = time.perf_counter() - started
    ticking.join()
    assert elapsed < 0.5
    assert QueueEntry.objects.filter(event=event).count() == 2
