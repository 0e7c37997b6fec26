"""The Redis sets of the waiting room against the writes that race them.

- A queue reconcile that read the WAITING rows before the organizer ended the
  sale must not write the line back after ``queue_close`` deleted it.
- A join whose Redis add lands after a tick admitted the customer, and a
  rebuild racing a tick, must not leave an admitted customer in the line."""

from __future__ import annotations

import pytest

from events.services import event_end
from queueing import services
from queueing.models import QueueEntry
from queueing.services import join as join_module
from queueing.services import rebuild as rebuild_module
from queueing.services import reconcile as reconcile_module
from queueing.store import queue_store
from tests.support.factories import CustomerFactory
from tests.support.races import Between
from tests.support.sales import join, make_event

pytestmark = pytest.mark.django_db(transaction=True)


def members(key: str) -> list[str]:
    return queue_store().r.zrange(key, 0, -1)


# --- an ended sale's line -------------------------------------------------------


def test_a_reconcile_racing_the_end_of_the_sale_does_not_bring_the_line_back(monkeypatch):
    event = make_event(tickets=5)
    waiting = [join(event)[0] for _ in range(3)]
    store = queue_store()
    store.r.delete(store.waiting_key(event.id))  # Redis lost the line: the reconcile re-adds it
    between = Between(
        monkeypatch,
        reconcile_module,
        "waiting_rows",
        lambda: event_end(event_id=event.id),
        materialize=True,
    )
    services.queue_reconcile_event(event_id=event.id)
    between.finish()
    assert QueueEntry.objects.filter(event=event, status="EXPIRED").count() == 3
    position = services.queue_position(event_id=event.id, customer_id=waiting[0].id)
    assert (position.status, position.position) == ("EXPIRED", None)
    assert position.reason == "sale_ended"
    assert members(store.waiting_key(event.id)) == []


# --- admitted but shown WAITING ---------------------------------------------------


def test_a_join_whose_redis_add_lands_after_its_admission_gets_its_token(monkeypatch):
    event = make_event(tickets=5)
    customer = CustomerFactory()
    # The join's row is committed; before its Redis add, a tick admits it.
    between = Between(
        monkeypatch,
        join_module,
        "queue_store",
        lambda: services.admission_tick_event(event_id=event.id),
    )
    services.queue_join(event_id=event.id, customer_id=customer.id)
    tick = between.finish()
    assert between.state == "done" and tick.admitted == 1
    position = services.queue_position(event_id=event.id, customer_id=customer.id)
    assert position.status == "ADMITTED"
    assert position.admission_token
    store = queue_store()
    assert str(customer.id) not in members(store.waiting_key(event.id))
    assert members(store.admitted_key(event.id)) == [str(customer.id)]


def test_a_rebuild_racing_a_tick_does_not_put_an_admitted_customer_back_in_line(monkeypatch):
    event = make_event(tickets=5)
    customer, _ = join(event)
    store = queue_store()
    store.r.delete(store.waiting_key(event.id))  # a wipe: the worker-start rebuild re-adds
    # The rebuild has read the WAITING rows when a tick admits the customer
    # (it waits for the admission lock if the rebuild holds it).
    between = Between(
        monkeypatch,
        rebuild_module,
        "waiting_rows",
        lambda: services.admission_tick_event(event_id=event.id),
        materialize=True,
        settle_timeout=0.5,
    )
    services.queue_rebuild(event_id=event.id)
    tick = between.finish()
    assert tick.admitted == 1
    assert QueueEntry.objects.get(event=event, customer=customer).status == "ADMITTED"
    position = services.queue_position(event_id=event.id, customer_id=customer.id)
    assert position.status == "ADMITTED"
    assert members(store.waiting_key(event.id)) == []
    assert members(store.admitted_key(event.id)) == [str(customer.id)]


def test_a_stale_admitted_member_does_not_turn_a_new_join_into_an_admission():
    """Redis lost the removal of an older admission of this customer: the new
    join still queues them (Postgres says WAITING)."""
    event = make_event(tickets=5)
    customer = CustomerFactory()
    store = queue_store()
    store.r.zadd(store.admitted_key(event.id), {str(customer.id): 1})
    result = services.queue_join(event_id=event.id, customer_id=customer.id)
    assert (result.status, result.position) == ("WAITING", 1)
    assert members(store.waiting_key(event.id)) == [str(customer.id)]
    assert members(store.admitted_key(event.id)) == []
