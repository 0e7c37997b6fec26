"""The admission tick: order, capacity, windows, pause, lock, crash healing."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from claims.models import Claim
from events.models import Event
from events.services import event_end
from fairqueue.faults import InjectedFault, fault_armed
from fairqueue.locks import release_token
from fairqueue.redis import get_redis
from inventory.models import Ticket
from queueing import services
from queueing.models import QueueEntry
from queueing.store import queue_store
from tests.support.factories import CustomerFactory
from tests.support.sales import admission_usable, join, make_event, past

pytestmark = pytest.mark.django_db


def waiting_in_redis(event) -> list[str]:
    store = queue_store()
    return store.r.zrange(store.waiting_key(event.id), 0, -1)


def admitted_in_redis(event) -> dict[str, float]:
    store = queue_store()
    return dict(store.r.zrange(store.admitted_key(event.id), 0, -1, withscores=True))


def statuses(event) -> dict[str, int]:
    out: dict[str, int] = {}
    for status in QueueEntry.objects.filter(event=event).values_list("status", flat=True):
        out[status] = out.get(status, 0) + 1
    return out


def take_ticket(event, customer) -> None:
    """What a claim does to Postgres (the claims app's job): the entry is
    completed and a ticket is held by a claim."""
    tier = event.tiers.get()
    claim = Claim.objects.create(
        event=event,
        tier=tier,
        customer=customer,
        quantity=1,
        amount=tier.price,
        currency="NGN",
        expires_at=timezone.now() + timedelta(minutes=10),
    )
    ticket = Ticket.objects.filter(tier=tier, claim__isnull=True).first()
    ticket.claim = claim
    ticket.save(update_fields=["claim"])
    entry = QueueEntry.objects.get(event=event, customer=customer, status="ADMITTED")
    assert services.queue_entry_complete(entry_id=entry.id)


def test_admits_the_next_batch_in_join_order():
    event = make_event(tickets=100, admission_batch_size=3)
    customers = [join(event)[0] for _ in range(5)]
    report = services.admission_tick_event(event_id=event.id)
    assert report.admitted == 3
    admitted = set(
        QueueEntry.objects.filter(event=event, status="ADMITTED").values_list(
            "customer_id", flat=True
        )
    )
    assert admitted == {c.id for c in customers[:3]}
    assert waiting_in_redis(event) == [str(c.id) for c in customers[3:]]
    expiry = QueueEntry.objects.filter(event=event, status="ADMITTED").first().admission_expires_at
    assert admitted_in_redis(event) == {str(c.id): expiry.timestamp() * 1000 for c in customers[:3]}
    assert expiry - timezone.now() <= timedelta(seconds=event.admission_window_seconds)
    assert expiry.microsecond == 0
    assert services.queue_position(event_id=event.id, customer_id=customers[3].id).position == 1


def test_never_admits_more_than_free_tickets_minus_admitted_and_unclaimed():
    event = make_event(tickets=4)
    customers = [join(event)[0] for _ in range(10)]
    assert services.admission_tick_event(event_id=event.id).admitted == 4
    # 4 admitted, none has claimed yet: the 4 tickets are spoken for.
    assert services.admission_tick_event(event_id=event.id).admitted == 0
    # One claims (ticket taken, entry completed): still 3 admitted + 1 sold = 4.
    take_ticket(event, customers[0])
    assert services.admission_tick_event(event_id=event.id).admitted == 0
    assert statuses(event) == {"COMPLETED": 1, "ADMITTED": 3, "WAITING": 6}
    # One lets the window lapse: the slot goes to the next in line.
    QueueEntry.objects.filter(event=event, customer=customers[1]).update(
        admission_expires_at=past()
    )
    report = services.admission_tick_event(event_id=event.id)
    assert (report.expired, report.admitted) == (1, 1)
    assert QueueEntry.objects.get(event=event, customer=customers[4]).status == "ADMITTED"
    assert QueueEntry.objects.get(event=event, customer=customers[5]).status == "WAITING"
    assert str(customers[1].id) not in admitted_in_redis(event)


def test_respects_max_active_admitted():
    event = make_event(tickets=100, max_active_admitted=2)
    for _ in range(5):
        join(event)
    assert services.admission_tick_event(event_id=event.id).admitted == 2
    assert services.admission_tick_event(event_id=event.id).admitted == 0
    assert statuses(event) == {"ADMITTED": 2, "WAITING": 3}


@pytest.mark.parametrize("status", ["PAUSED", "SOLD_OUT"])
def test_a_paused_or_sold_out_event_admits_nobody(status):
    event = make_event(tickets=100)
    for _ in range(3):
        join(event)
    Event.objects.filter(pk=event.pk).update(status=status)
    report = services.admission_tick_event(event_id=event.id)
    assert report.admitted == 0
    assert statuses(event) == {"WAITING": 3}
    assert len(waiting_in_redis(event)) == 3
    assert admitted_in_redis(event) == {}


def test_a_paused_event_still_expires_lapsed_admissions():
    event = make_event(tickets=100)
    customer, _ = join(event)
    services.admission_tick_event(event_id=event.id)
    Event.objects.filter(pk=event.pk).update(status="PAUSED")
    QueueEntry.objects.filter(customer=customer).update(admission_expires_at=past())
    assert services.admission_tick_event(event_id=event.id).expired == 1
    assert statuses(event) == {"EXPIRED": 1}


def test_nobody_is_admitted_after_the_sale_window():
    event = make_event(tickets=100)
    join(event)
    Event.objects.filter(pk=event.pk).update(sale_start=past(7200), sale_end=past(1))
    assert services.admission_tick_event(event_id=event.id).admitted == 0


def test_rerunning_a_tick_is_idempotent():
    event = make_event(tickets=2)
    for _ in range(4):
        join(event)
    services.admission_tick_event(event_id=event.id)
    before = (statuses(event), waiting_in_redis(event), admitted_in_redis(event))
    services.admission_tick_event(event_id=event.id)
    assert (statuses(event), waiting_in_redis(event), admitted_in_redis(event)) == before
    # Replaying the Redis move of the same customers changes nothing either.
    store = queue_store()
    admitted = list(before[2])
    store.admit(
        event_id=event.id,
        customer_ids=admitted,
        served=store.served(event_id=event.id),
        expires_ms=int(before[2][admitted[0]]),
        now_ms=0,
        duration_ms=0,
        interval_ms=5000,
        window_ms=60000,
    )
    assert (waiting_in_redis(event), admitted_in_redis(event)) == before[1:]


def test_a_held_lock_skips_the_tick_and_only_its_owner_releases_it(settings):
    settings.ADMISSION_INTERVAL_SECONDS = 0.4  # the tick waits 0.2 s for the lock
    event = make_event(tickets=10)
    join(event)
    key = queue_store().lock_key(event.id)
    lock = get_redis().lock(key, timeout=10, thread_local=False)
    assert lock.acquire(blocking=False)
    started = time.monotonic()
    assert services.admission_tick_event(event_id=event.id).skipped == "locked"
    assert time.monotonic() - started >= 0.15
    assert statuses(event) == {"WAITING": 1}
    release_token(key, "someone-else")
    assert lock.owned()
    lock.release()
    assert services.admission_tick_event(event_id=event.id).admitted == 1


def test_a_tick_waits_for_a_lock_released_within_half_a_tick(settings):
    """A full reconciliation holds the event's lock for seconds on a big
    queue: the tick that meets it is delayed, not lost."""
    settings.ADMISSION_INTERVAL_SECONDS = 2.0  # waits up to 1 s
    event = make_event(tickets=10)
    join(event)
    lock = get_redis().lock(queue_store().lock_key(event.id), timeout=10, thread_local=False)
    assert lock.acquire(blocking=False)
    releaser = threading.Timer(0.3, lock.release)
    releaser.start()
    try:
        report = services.admission_tick_event(event_id=event.id)
    finally:
        releaser.join()
    assert (report.skipped, report.admitted) == ("", 1)
    assert statuses(event) == {"ADMITTED": 1}


def test_the_tick_records_its_rate_and_the_served_counter(settings):
    event = make_event(tickets=100, admission_batch_size=2)
    for _ in range(5):
        join(event)
    first = services.admission_tick_event(event_id=event.id)
    second = services.admission_tick_event(event_id=event.id)
    assert (first.served, second.served) == (2, 4)
    store = queue_store()
    assert store.served(event_id=event.id) == 4
    samples = store.r.lrange(store.ticks_key(event.id), 0, -1)
    assert [s.split(":")[1] for s in samples] == ["2", "2"]
    # 4 admitted over the time the two ticks covered plus one interval (the
    # gap between them is measured, not assumed: a busy machine widens it)
    newest, oldest = (int(s.split(":")[0]) for s in samples)
    interval_ms = settings.ADMISSION_INTERVAL_SECONDS * 1000
    assert store.rate(event_id=event.id) == pytest.approx(
        4 * 1000 / (newest - oldest + interval_ms), abs=1e-6
    )


def test_the_served_counter_comes_back_from_postgres_after_a_wipe(redis_clean):
    event = make_event(tickets=100, admission_batch_size=2)
    for _ in range(4):
        join(event)
    services.admission_tick_event(event_id=event.id)
    redis_clean.flushdb()
    services.queue_rebuild(event_id=event.id)
    assert services.admission_tick_event(event_id=event.id).served == 4


def test_a_crash_between_commit_and_redis_is_healed_by_the_next_tick(fault_hooks):
    event = make_event(tickets=100, admission_batch_size=2)
    customers = [join(event)[0] for _ in range(3)]
    with fault_armed("queue.admit.after_commit"), pytest.raises(InjectedFault):
        services.admission_tick_event(event_id=event.id)
    # Postgres is the truth: two admitted; Redis did not hear of it.
    assert statuses(event) == {"ADMITTED": 2, "WAITING": 1}
    assert len(waiting_in_redis(event)) == 3
    # The lock was released despite the crash; a tick does not re-admit them
    # (capacity and the next in line come from Postgres), and moves them.
    report = services.admission_tick_event(event_id=event.id)
    assert (report.admitted, report.readmitted) == (1, 2)
    assert waiting_in_redis(event) == []
    assert set(admitted_in_redis(event)) == {str(c.id) for c in customers}
    assert queue_store().served(event_id=event.id) == 3
    assert services.queue_reconcile_event(event_id=event.id, full=False) == {
        "waiting_added": 0,
        "admitted_added": 0,
        "dropped": 0,
    }
    position = services.queue_position(event_id=event.id, customer_id=customers[0].id)
    assert position.status == "ADMITTED"
    assert position.admission_token


def test_with_redis_down_the_tick_still_admits_from_postgres(dead_redis):
    """Redis is a performance layer: admission goes on without it, and the
    admitted customer gets a working token from the position endpoint."""
    event = make_event(tickets=100, admission_batch_size=2)
    customers = [join(event)[0] for _ in range(3)]
    report = services.admission_tick_event(event_id=event.id)
    assert (report.admitted, report.skipped) == (2, "redis_unavailable")
    assert statuses(event) == {"ADMITTED": 2, "WAITING": 1}
    position = services.queue_position(event_id=event.id, customer_id=customers[0].id)
    assert position.status == "ADMITTED"
    admission_usable(event, customers[0], position.admission_token)
    assert services.queue_position(event_id=event.id, customer_id=customers[2].id).position == 1


def test_queue_close_expires_everyone_left():
    event = make_event(tickets=2)
    for _ in range(5):
        join(event)
    services.admission_tick_event(event_id=event.id)
    abandoned, _ = join(event)
    services.queue_abandon(event_id=event.id, customer_id=abandoned.id)
    assert services.queue_close(event_id=event.id) == 5
    assert statuses(event) == {"EXPIRED": 5, "ABANDONED": 1}
    assert waiting_in_redis(event) == []
    assert admitted_in_redis(event) == {}


def test_event_end_closes_the_queue_on_commit(django_capture_on_commit_callbacks):
    event = make_event(tickets=2)
    for _ in range(3):
        join(event)
    with django_capture_on_commit_callbacks(execute=True):
        event_end(event_id=event.id)
    assert statuses(event) == {"EXPIRED": 3}


def test_reconciliation_closes_entries_left_on_an_ended_event():
    event = make_event(tickets=2)
    join(event)
    # A join that raced event_end (the hot path caches the event for a second).
    Event.objects.filter(pk=event.pk).update(status="ENDED")
    services.queue_reconcile_all()
    assert statuses(event) == {"EXPIRED": 1}


def test_admission_tick_task_runs_every_live_event():
    from queueing.tasks import admission_tick

    events = [make_event(tickets=5) for _ in range(2)]
    paused = make_event(tickets=5, status="PAUSED")
    for e in [*events, paused]:
        join(e)
        join(e)
    assert admission_tick.apply().get() == 4
    assert statuses(paused) == {"WAITING": 2}
    assert CustomerFactory
