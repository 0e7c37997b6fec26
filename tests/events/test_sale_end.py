"""When ``sale_end`` passes, the sale ends by itself. The
beat runs, the event becomes ENDED, everyone still waiting or admitted is
EXPIRED with the reason ``sale_ended``, told so by an ``expired`` push, and
the position endpoint says so."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connection, transaction
from django.utils import timezone

from config.asgi import application
from config.celery import _beat_schedule, app
from events.models import Event
from events.services import events_end_due
from queueing import services
from queueing.models import QueueEntry
from queueing.store import queue_store
from tests.support.sales import join, make_event

pytestmark = pytest.mark.django_db(transaction=True)


def run_every_beat_task() -> None:
    app.loader.import_default_modules()
    for entry in _beat_schedule().values():
        app.tasks[entry["task"]]()


def test_the_beat_ends_a_sale_whose_window_closed_and_expires_its_line(sandbox):
    event = make_event(tickets=5, admission_batch_size=1)
    admitted, _ = join(event)
    waiting, _ = join(event)
    assert services.admission_tick_event(event_id=event.id).admitted == 1
    Event.objects.filter(pk=event.pk).update(sale_end=timezone.now() - timedelta(seconds=1))
    ticket = services.ws_ticket_issue(event_id=event.id, customer_id=waiting.id).ticket

    async def scenario() -> list[dict]:
        ws = WebsocketCommunicator(application, f"/ws/events/{event.id}/queue/?ticket={ticket}")
        assert (await ws.connect())[0]
        await ws.receive_json_from()  # the position snapshot
        await sync_to_async(run_every_beat_task)()
        pushes = []
        try:  # "ended" to the event's watchers, "expired" to this customer
            for _ in range(2):
                pushes.append(await ws.receive_json_from(5))
        except TimeoutError:
            return pushes  # nothing more came (the communicator stopped the consumer)
        await ws.disconnect()
        return pushes

    pushes = async_to_sync(scenario)()
    event.refresh_from_db()
    assert event.status == "ENDED"
    assert len(pushes) == 2
    entries = QueueEntry.objects.filter(event=event)
    assert sorted(entries.values_list("status", "end_reason")) == [
        ("EXPIRED", "sale_ended"),
        ("EXPIRED", "sale_ended"),
    ]
    assert {"type": "expired", "event_id": str(event.id), "reason": "sale_ended"} in pushes
    for customer in (admitted, waiting):
        position = services.queue_position(event_id=event.id, customer_id=customer.id)
        assert (position.status, position.reason, position.position) == (
            "EXPIRED",
            "sale_ended",
            None,
        )
        assert position.admission_token is None
    store = queue_store()
    assert store.r.exists(store.waiting_key(event.id), store.admitted_key(event.id)) == 0


def test_a_sale_whose_window_is_still_open_is_left_alone(sandbox):
    event = make_event(tickets=5)
    customer, _ = join(event)
    run_every_beat_task()
    event.refresh_from_db()
    assert event.status == "ACTIVE"
    assert QueueEntry.objects.get(event=event, customer=customer).status in ("WAITING", "ADMITTED")


def test_an_event_whose_row_stays_locked_is_ended_on_the_next_run_and_the_others_now(settings):
    """Ending waits for the event row (FOR UPDATE, so joins in flight finish
    first) at most the lock timeout; a row held longer (an admin edit, a long
    tick) is left for the next run instead of stopping this one."""
    settings.DB_LOCK_TIMEOUT_MS = 200
    held, other = make_event(tickets=5), make_event(tickets=5)
    Event.objects.filter(pk__in=[held.pk, other.pk]).update(
        sale_end=timezone.now() - timedelta(seconds=1)
    )
    locked, release = threading.Event(), threading.Event()

    def hold_the_row() -> None:
        try:
            with transaction.atomic():
                Event.objects.select_for_update(no_key=True).get(pk=held.pk)
                locked.set()
                release.wait(10)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_row)
    holder.start()
    try:
        assert locked.wait(10)
        assert events_end_due() == [str(other.id)]
        assert Event.objects.get(pk=held.pk).status == "ACTIVE"
    finally:
        release.set()
        holder.join(10)
    assert events_end_due() == [str(held.id)]
    assert Event.objects.get(pk=held.pk).status == "ENDED"
