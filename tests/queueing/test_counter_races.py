"""Counters and scores against the writes that race them, each race forced:

- the ``served`` counter must not count a tick twice when Redis was flushed
  and the counter re-made from Postgres between the tick's commit and its
  Redis move;
- a pre-queue join whose Redis add lands just after the shuffle must get its
  shuffled score in Redis, not keep its arrival time until a full reconcile."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from queueing import services
from queueing.models import QueueEntry
from queueing.services import admission as admission_module
from queueing.services import join as join_module
from queueing.store import queue_store
from tests.support.factories import CustomerFactory
from tests.support.races import Between
from tests.support.sales import join, make_event

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_flush_between_the_tick_commit_and_its_redis_move_does_not_double_count_served(
    monkeypatch,
):
    event = make_event(tickets=10)
    for _ in range(3):
        join(event)
    store = queue_store()

    def flush_and_rebuild() -> None:
        store.r.flushdb()
        services.queue_rebuild(event_id=event.id)  # e.g. a worker starting

    between = Between(monkeypatch, admission_module, "_admit_in_postgres", flush_and_rebuild)
    report = services.admission_tick_event(event_id=event.id, use_lock=False)
    between.finish()
    assert report.admitted == 3
    assert QueueEntry.objects.filter(event=event, admitted_at__isnull=False).count() == 3
    assert int(store.r.get(store.served_key(event.id))) == 3
    assert report.served == 3


def test_a_prequeue_join_landing_just_after_the_shuffle_gets_its_shuffled_score(monkeypatch):
    starts = timezone.now() + timedelta(seconds=1.5)
    event = make_event(
        tickets=10,
        status="PAUSED",
        sale_start=starts,
        prequeue_opens_at=timezone.now() - timedelta(minutes=10),
    )
    for _ in range(3):
        join(event)
    late = CustomerFactory()

    def shuffle_at_sale_start():
        time.sleep(max(0.0, (starts - timezone.now()).total_seconds()) + 0.1)
        return services.admission_tick_event(event_id=event.id)

    # The join's row is in (a pre-queue entry); the sale starts and the
    # shuffle runs before the join's Redis add.
    between = Between(monkeypatch, join_module, "queue_store", shuffle_at_sale_start)
    services.queue_join(event_id=event.id, customer_id=late.id)
    tick = between.finish()
    assert tick.shuffled == 4
    entry = QueueEntry.objects.get(event=event, customer=late)
    assert entry.prequeue and entry.score <= 4
    store = queue_store()
    assert store.r.zscore(store.waiting_key(event.id), str(late.id)) == entry.score
    expected = [
        str(c)
        for c in QueueEntry.objects.filter(event=event, status="WAITING")
        .order_by("score", "customer_id")
        .values_list("customer_id", flat=True)
    ]
    assert store.r.zrange(store.waiting_key(event.id), 0, -1) == expected
