"""A join racing the end of the sale. The join reads the event from a cache
up to a second old, so its INSERT checks the event itself (live, sale not
over) under FOR KEY SHARE, and ``event_end`` locks the row FOR UPDATE: a
join either commits before the sale ends (its entry is expired with the rest
of the line) or inserts nothing. And whatever an entry still says, the
position of an event that is no longer live is EXPIRED / ``sale_ended``."""

from __future__ import annotations

import pytest
from django.db import transaction

from events.models import Event
from events.services import event_end
from fairqueue.errors import Conflict
from queueing import services
from queueing.models import QueueEntry
from queueing.services import join as join_module
from queueing.store import queue_store
from tests.support.factories import CustomerFactory
from tests.support.races import Between, race
from tests.support.sales import join, make_event

pytestmark = pytest.mark.django_db(transaction=True)


def live_entries(event) -> int:
    return QueueEntry.objects.filter(event=event, status__in=["WAITING", "ADMITTED"]).count()


def test_a_join_that_read_the_event_before_the_sale_ended_inserts_nothing(monkeypatch):
    event = make_event(tickets=5)
    customer = CustomerFactory()
    # The join has the event (ACTIVE) from its cache; the sale ends, and its
    # line is closed, before the join's INSERT.
    between = Between(
        monkeypatch, join_module, "event_snapshot", lambda: event_end(event_id=event.id)
    )

    with pytest.raises(Conflict) as refused:
        services.queue_join(event_id=event.id, customer_id=customer.id)

    between.finish()
    assert between.state == "done"
    assert refused.value.code == "event_not_on_sale"
    assert QueueEntry.objects.filter(event=event).count() == 0
    store = queue_store()
    assert store.r.zrange(store.waiting_key(event.id), 0, -1) == []


def test_a_sale_ending_while_a_join_commits_closes_that_entry_too(monkeypatch):
    event = make_event(tickets=5)
    customer = CustomerFactory()
    # The join's INSERT is written, not committed (a transaction holds it
    # open at the seam), when the organizer ends the sale: the end waits for
    # the join, and the close that follows sees its entry.
    between = Between(monkeypatch, join_module, "queue_store", lambda: event_end(event_id=event.id))
    with transaction.atomic():
        joined = services.queue_join(event_id=event.id, customer_id=customer.id)

    between.finish()
    entry = QueueEntry.objects.get(event=event, customer=customer)
    assert (entry.status, entry.end_reason) == ("EXPIRED", "sale_ended")
    assert (between.state, joined.status) == ("blocked", "WAITING")
    answer = services.queue_position(event_id=event.id, customer_id=customer.id)
    assert (answer.status, answer.reason) == ("EXPIRED", "sale_ended")


def test_joins_racing_the_end_leave_no_live_entry():
    event = make_event(tickets=5)
    customers = [CustomerFactory() for _ in range(24)]

    def act(customer):
        if customer is None:
            return event_end(event_id=event.id)
        return services.queue_join(event_id=event.id, customer_id=customer.id)

    results = race(act, [*customers[:12], None, *customers[12:]], threads=25)

    assert Event.objects.get(pk=event.pk).status == "ENDED"
    assert live_entries(event) == 0
    joined = [r for r in results if isinstance(r, services.JoinResult)]
    refused = [r for r in results if isinstance(r, Conflict)]
    assert len(joined) + len(refused) == 24
    assert {r.code for r in refused} <= {"event_not_on_sale"}
    assert QueueEntry.objects.filter(event=event).count() == len(joined)


@pytest.mark.parametrize("admitted", [False, True], ids=["waiting", "admitted"])
def test_an_entry_still_live_at_an_ended_event_reads_expired(admitted):
    event = make_event(tickets=5)
    customer, _ = join(event)
    if admitted:
        assert services.admission_tick_event(event_id=event.id).admitted == 1
    # Ended, and the close that expires the line has not run (yet).
    Event.objects.filter(pk=event.pk).update(status="ENDED")

    answer = services.queue_position(event_id=event.id, customer_id=customer.id)

    assert (answer.status, answer.position, answer.reason) == ("EXPIRED", None, "sale_ended")
    assert answer.admission_token is None
