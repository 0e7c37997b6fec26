"""The queue WebSocket, through the real ASGI application (URL routing, the
single-use ticket) and the real Redis channel layer."""

from __future__ import annotations

import json
import uuid

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from autobahn.exception import Disconnected
from channels.testing import WebsocketCommunicator

from config.asgi import application
from events.services import event_end, event_pause, event_resume
from queueing import services
from queueing.consumers import QueueConsumer, origin_allowed
from queueing.models import QueueEntry
from queueing.store import queue_store
from queueing.tokens import admission_token_read
from tests.support.factories import CustomerFactory
from tests.support.sales import join, make_event, past

pytestmark = pytest.mark.django_db(transaction=True)


def ticket_of(event_id, customer) -> str:
    return services.ws_ticket_issue(event_id=event_id, customer_id=customer.id).ticket


def communicator(event_id, ticket=None, origin=None) -> WebsocketCommunicator:
    path = f"/ws/events/{event_id}/queue/"
    if ticket is not None:
        path += f"?ticket={ticket}"
    headers = [(b"origin", origin.encode())] if origin else []
    return WebsocketCommunicator(application, path, headers=headers)


def run(coro_fn):
    return async_to_sync(coro_fn)()


async def _close_code(ws) -> int:
    connected, _ = await ws.connect()
    assert connected  # accepted, so that a browser can read the close code
    message = await ws.receive_output(timeout=2)
    assert message["type"] == "websocket.close"
    return message["code"]


def test_missing_or_bad_ticket_cannot_connect():
    event = make_event()

    async def scenario():
        codes = []
        for ticket in (None, "", "garbage", "a.b.c"):
            ws = communicator(event.id, ticket)
            codes.append(await _close_code(ws))
            await ws.wait()
        return codes

    assert run(scenario) == [4401, 4401, 4401, 4401]


def test_an_admission_token_is_not_a_ticket():
    event = make_event()
    _customer, _entry, admission = _admitted(event)

    async def scenario():
        return await _close_code(communicator(event.id, admission))

    assert run(scenario) == 4401


def _admitted(event):
    from tests.support.sales import admit

    return admit(event)


def test_foreign_origin_is_refused(settings):
    settings.ALLOWED_HOSTS = ["tickets.example.com"]
    event = make_event()
    customer = CustomerFactory()

    ticket = ticket_of(event.id, customer)

    async def scenario():
        ws = communicator(event.id, ticket, origin="https://evil.example.net")
        return await _close_code(ws)

    assert run(scenario) == 4403


def test_origin_rules(settings):
    settings.ALLOWED_HOSTS = ["tickets.example.com", ".fairqueue.test"]
    settings.WEBSOCKET_ALLOWED_ORIGINS = []
    settings.PUBLIC_BASE_URL = "https://tickets.example.com"
    assert origin_allowed(None)  # not a browser
    assert origin_allowed("https://tickets.example.com")
    assert not origin_allowed("https://evil.example.net")
    assert not origin_allowed("null")
    settings.WEBSOCKET_ALLOWED_ORIGINS = ["https://shop.example.org"]
    assert origin_allowed("https://shop.example.org")
    assert not origin_allowed("https://tickets.example.com")


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("https://tickets.example.com", True),
        ("https://TICKETS.example.com:443", True),  # the same origin, spelt out
        ("https://tickets.example.com/", True),
        ("http://tickets.example.com", False),  # another scheme
        ("https://tickets.example.com:8443", False),  # another port
        ("http://127.0.0.1:9999", False),  # an allowed host, on any other page
        ("https://app.fairqueue.test", False),  # allowed hosts are not origins
        ("https://tickets.example.com.evil.net", False),
        ("https://user@tickets.example.com", False),
        ("null", False),
        ("", False),
    ],
)
def test_the_sites_origin_is_compared_whole(settings, origin, allowed):
    """Scheme, host and port: the origin of PUBLIC_BASE_URL, where the pages are."""
    settings.ALLOWED_HOSTS = ["tickets.example.com", ".fairqueue.test", "127.0.0.1"]
    settings.WEBSOCKET_ALLOWED_ORIGINS = []
    settings.PUBLIC_BASE_URL = "https://tickets.example.com"

    assert origin_allowed(origin) is allowed


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("https://shop.example.org", True),
        ("https://shop.example.org:443", True),
        ("http://shop.example.org", False),
        ("https://shop.example.org:444", False),
    ],
)
def test_listed_origins_are_compared_whole(settings, origin, allowed):
    settings.WEBSOCKET_ALLOWED_ORIGINS = ["https://shop.example.org"]

    assert origin_allowed(origin) is allowed


def test_in_development_a_phone_on_the_lan_opens_the_socket_from_the_pages_port(settings):
    """`make run`: no PUBLIC_BASE_URL, any host, pages on PORT and the socket
    on WS_PORT; the page's origin is http://<the address the phone used>:PORT."""
    settings.PUBLIC_BASE_URL = ""
    settings.WEBSOCKET_ALLOWED_ORIGINS = []
    settings.ALLOWED_HOSTS = ["*"]
    settings.PORT = 8000

    assert origin_allowed("http://192.168.1.20:8000")
    assert origin_allowed("http://localhost:8000")
    assert not origin_allowed("http://192.168.1.20:9999")
    assert not origin_allowed("https://192.168.1.20:8000")


def test_unknown_event_is_refused():

    async def scenario():
        return await _close_code(communicator(uuid.uuid4(), "a-ticket"))

    assert run(scenario) == 4404


def test_connect_sends_the_snapshot_then_the_tick_brings_admitted_and_the_line():
    event = make_event(tickets=1)
    first, _ = join(event)
    second, _ = join(event)

    first_ticket, second_ticket = ticket_of(event.id, first), ticket_of(event.id, second)

    async def scenario():
        ws_first = communicator(event.id, first_ticket, origin="http://localhost:8000")
        ws_second = communicator(event.id, second_ticket)
        assert (await ws_first.connect())[0]
        assert (await ws_second.connect())[0]
        snapshots = [await ws_first.receive_json_from(), await ws_second.receive_json_from()]
        report = await sync_to_async(services.admission_tick_event)(event_id=event.id)
        first_got = await ws_first.receive_json_from(2)
        second_got = await ws_second.receive_json_from(2)
        nothing_more = await ws_first.receive_nothing(0.3) and await ws_second.receive_nothing()
        await ws_first.disconnect()
        await ws_second.disconnect()
        return snapshots, report, first_got, second_got, nothing_more

    snapshots, report, first_got, second_got, nothing_more = run(scenario)
    entries = {e.customer_id: e for e in QueueEntry.objects.filter(event=event)}
    assert [(s["type"], s["status"], s["position"], s["served"]) for s in snapshots] == [
        ("position", "WAITING", 1, 0),
        ("position", "WAITING", 2, 0),
    ]
    assert [(s["score"], s["epoch"]) for s in snapshots] == [
        (entries[first.id].score, 0),
        (entries[second.id].score, 0),
    ]
    assert report.admitted == 1
    assert first_got["type"] == "admitted"
    admission = admission_token_read(
        token=first_got["admission_token"], event_id=event.id, customer_id=first.id
    )
    assert admission.queue_entry_id == entries[first.id].id
    assert first_got["admission_expires_at"] == entries[first.id].admission_expires_at.isoformat()
    # The second is next (place 1 after a tick that admitted 1): it hears the
    # line state, the same bytes as GET queue/state/; the first, admitted,
    # hears nothing more.
    assert second_got["type"] == "line"
    assert second_got == json.loads(queue_store().state(event_id=event.id))
    assert (second_got["served"], second_got["frontier"]) == (1, entries[first.id].score)
    assert nothing_more


def test_expired_paused_and_resumed_are_pushed():
    event = make_event(tickets=5)
    customer, _ = join(event)
    services.admission_tick_event(event_id=event.id)

    ticket = ticket_of(event.id, customer)

    async def scenario():
        ws = communicator(event.id, ticket)
        assert (await ws.connect())[0]
        snapshot = await ws.receive_json_from()
        await sync_to_async(event_pause)(event_id=event.id)
        paused = await ws.receive_json_from(2)
        await sync_to_async(QueueEntry.objects.filter(customer=customer).update)(
            admission_expires_at=past()
        )
        await sync_to_async(services.admission_tick_event)(event_id=event.id)
        expired = await ws.receive_json_from(2)
        await sync_to_async(event_resume)(event_id=event.id)
        resumed = await ws.receive_json_from(2)
        await ws.disconnect()
        return snapshot, paused, expired, resumed

    snapshot, paused, expired, resumed = run(scenario)
    assert snapshot["status"] == "ADMITTED"
    assert snapshot["admission_token"]
    assert paused["type"] == "paused"
    assert expired == {"type": "expired", "event_id": str(event.id), "reason": "admission_window"}
    assert resumed["type"] == "resumed"


def test_a_customer_not_in_the_queue_may_watch_and_ask_again():
    event = make_event()
    customer = CustomerFactory()

    ticket = ticket_of(event.id, customer)

    async def scenario():
        ws = communicator(event.id, ticket)
        assert (await ws.connect())[0]
        before = await ws.receive_json_from()
        await sync_to_async(join)(event, customer)
        await ws.send_to(text_data="{not json")
        await ws.send_json_to({"type": "position"})
        after = await ws.receive_json_from()
        await ws.disconnect()
        return before, after

    before, after = run(scenario)
    assert before["status"] is None
    assert before["code"] == "not_in_queue"
    assert (after["status"], after["position"]) == ("WAITING", 1)


def test_a_push_to_a_socket_that_just_closed_is_dropped_quietly():
    """daphne raises Disconnected when a push meets a socket the client has
    closed; the consumer drops that push and goes on (its disconnect message
    follows), instead of dying with a logged traceback."""
    sent = []

    async def closed_socket(message):
        raise Disconnected("Attempt to send on a closed protocol")

    async def open_socket(message):
        sent.append(message)

    consumer = QueueConsumer()
    push = {"type": "queue.push", "message": {"type": "position", "served": 1}}

    async def scenario():
        consumer.base_send = closed_socket
        await consumer.dispatch(push)
        consumer.base_send = open_socket
        await consumer.dispatch(push)

    run(scenario)
    assert sent == [{"type": "websocket.send", "text": '{"type": "position", "served": 1}'}]


def test_an_admitted_customer_hears_expired_when_the_sale_ends():
    event = make_event(tickets=5)
    customer, _ = join(event)
    services.admission_tick_event(event_id=event.id)

    ticket = ticket_of(event.id, customer)

    async def scenario():
        ws = communicator(event.id, ticket)
        assert (await ws.connect())[0]
        await ws.receive_json_from()  # the snapshot
        await sync_to_async(event_end)(event_id=event.id)
        messages = [await ws.receive_json_from(2), await ws.receive_json_from(2)]
        await ws.disconnect()
        return messages

    messages = run(scenario)
    expired = {"type": "expired", "event_id": str(event.id), "reason": "sale_ended"}
    assert expired in messages
    assert QueueEntry.objects.get(customer=customer).status == "EXPIRED"
