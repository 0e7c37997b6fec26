"""The pre-queue: shuffled once at sale start, ahead of later joiners,
persisted in Postgres before Redis."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from events.models import Event
from fairqueue.faults import InjectedFault, fault_armed
from queueing import services
from queueing.models import QueueEntry
from queueing.store import queue_store
from tests.support.sales import join, make_event

pytestmark = pytest.mark.django_db

PREQUEUED = 40


def waiting_order(event) -> list[str]:
    store = queue_store()
    return store.r.zrange(store.waiting_key(event.id), 0, -1)


def postgres_order(event) -> list[str]:
    return [
        str(c)
        for c in QueueEntry.objects.filter(event=event, status="WAITING")
        .order_by("score", "customer_id")
        .values_list("customer_id", flat=True)
    ]


@pytest.fixture
def prequeued():
    """An event whose pre-queue is open; 40 customers join before the sale,
    then the sale starts and 5 more join. Nobody is admitted yet (paused)."""
    event = make_event(
        tickets=100,
        sale_start=timezone.now() + timedelta(hours=1),
        prequeue_opens_at=timezone.now() - timedelta(minutes=10),
    )
    early = [join(event)[0] for _ in range(PREQUEUED)]
    Event.objects.filter(pk=event.pk).update(sale_start=timezone.now() - timedelta(seconds=1))
    late = [join(event)[0] for _ in range(5)]
    return event, early, late


def test_prequeue_joins_are_marked_and_later_ones_are_not(prequeued):
    event, early, late = prequeued
    marked = QueueEntry.objects.filter(event=event, prequeue=True)
    assert set(marked.values_list("customer_id", flat=True)) == {c.id for c in early}
    assert not QueueEntry.objects.filter(customer__in=late, prequeue=True).exists()


def test_sale_start_shuffles_the_prequeue_into_a_permutation_ahead_of_later_joiners(prequeued):
    event, early, late = prequeued
    Event.objects.filter(pk=event.pk).update(status="PAUSED")  # admit nobody, still shuffle
    join_order = [str(c.id) for c in early]
    assert waiting_order(event)[:PREQUEUED] == join_order

    report = services.admission_tick_event(event_id=event.id)
    assert report.shuffled == PREQUEUED

    scores = sorted(
        QueueEntry.objects.filter(event=event, prequeue=True).values_list("score", flat=True)
    )
    assert scores == list(range(1, PREQUEUED + 1))
    order = waiting_order(event)
    assert order == postgres_order(event)
    assert sorted(order[:PREQUEUED]) == sorted(join_order)
    assert order[:PREQUEUED] != join_order  # 1 in 40! to fail by chance
    assert order[PREQUEUED:] == [str(c.id) for c in late]  # FIFO behind them
    assert Event.objects.get(pk=event.pk).prequeue_shuffled_at is not None


def test_the_shuffle_happens_once(prequeued):
    event, _, _ = prequeued
    Event.objects.filter(pk=event.pk).update(status="PAUSED")
    services.admission_tick_event(event_id=event.id)
    first = postgres_order(event)
    assert services.admission_tick_event(event_id=event.id).shuffled == 0
    assert postgres_order(event) == first == waiting_order(event)


def test_the_first_admitted_are_from_the_shuffled_prequeue(prequeued):
    event, early, _ = prequeued
    Event.objects.filter(pk=event.pk).update(admission_batch_size=10)
    report = services.admission_tick_event(event_id=event.id)
    assert (report.shuffled, report.admitted) == (PREQUEUED, 10)
    admitted = QueueEntry.objects.filter(event=event, status="ADMITTED")
    assert sorted(admitted.values_list("score", flat=True)) == list(range(1, 11))
    assert {e.customer_id for e in admitted} <= {c.id for c in early}


def test_the_shuffled_order_survives_a_redis_wipe(prequeued, redis_clean):
    event, _, _ = prequeued
    Event.objects.filter(pk=event.pk).update(status="PAUSED")
    services.admission_tick_event(event_id=event.id)
    shuffled = waiting_order(event)
    redis_clean.flushall()
    services.queue_rebuild(event_id=event.id)
    assert waiting_order(event) == shuffled
    # The rebuild carried the shuffled scores: the next tick does not redo it.
    assert services.admission_tick_event(event_id=event.id).shuffled == 0
    assert waiting_order(event) == shuffled


def test_a_crash_between_the_postgres_shuffle_and_redis_is_repaired(prequeued, fault_hooks):
    event, early, _ = prequeued
    Event.objects.filter(pk=event.pk).update(status="PAUSED")
    with fault_armed("queue.prequeue.after_commit"), pytest.raises(InjectedFault):
        services.admission_tick_event(event_id=event.id)
    # Postgres has the new order, Redis still the join order.
    assert waiting_order(event)[:PREQUEUED] == [str(c.id) for c in early]
    assert postgres_order(event) != waiting_order(event)
    services.admission_tick_event(event_id=event.id)
    assert waiting_order(event) == postgres_order(event)


def test_an_event_without_prequeue_is_never_shuffled():
    event = make_event(tickets=10)
    customers = [join(event)[0] for _ in range(5)]
    Event.objects.filter(pk=event.pk).update(status="PAUSED")
    assert services.admission_tick_event(event_id=event.id).shuffled == 0
    assert waiting_order(event) == [str(c.id) for c in customers]
    assert Event.objects.get(pk=event.pk).prequeue_shuffled_at is None
