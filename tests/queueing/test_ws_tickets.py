"""WebSocket auth without long-lived secrets in URLs: the socket opens with
a single-use ticket valid at most 60 s (POST .../queue/ws-ticket/), and no
longer with the 24-hour customer token."""

from __future__ import annotations

import hashlib
import threading

import pytest
import redis
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings

from config.asgi import application
from customers.tokens import customer_token_issue
from fairqueue.redis import get_redis
from queueing import services, ws_tickets
from queueing.ws_tickets import WsTicketStore
from tests.support.factories import CustomerFactory, bearer
from tests.support.races import race_calls
from tests.support.sales import join, make_event

pytestmark = pytest.mark.django_db(transaction=True)


def ticket_url(event_id) -> str:
    return f"/api/v1/events/{event_id}/queue/ws-ticket/"


def close_code(path: str, origin: str | None = None) -> int | None:
    """Connect; the close code, or None when the socket stayed open (and
    sent its snapshot)."""

    async def scenario():
        headers = [(b"origin", origin.encode())] if origin else []
        ws = WebsocketCommunicator(application, path, headers=headers)
        connected, _ = await ws.connect()
        assert connected
        message = await ws.receive_output(timeout=2)
        await ws.disconnect()
        if message["type"] == "websocket.close":
            return message["code"]
        assert message["type"] == "websocket.send"
        return None

    return async_to_sync(scenario)()


def test_the_endpoint_gives_a_short_single_use_ticket_and_stores_only_its_hash(api):
    event = make_event()
    customer, _ = join(event)

    response = api.post(ticket_url(event.id), **bearer(customer))

    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"ticket", "expires_in"}
    assert body["expires_in"] == settings.WS_TICKET_TTL_SECONDS <= 60
    keys = get_redis().keys("fq:*wsticket*")
    assert len(keys) == 1
    assert keys[0].endswith(hashlib.sha256(body["ticket"].encode()).hexdigest())
    assert body["ticket"] not in keys[0]
    assert 0 < get_redis().ttl(keys[0]) <= 60
    assert get_redis().get(keys[0]) == str(customer.id)


def test_the_endpoint_needs_a_signed_in_customer_and_a_known_event(api):
    event = make_event()
    anonymous = api.post(ticket_url(event.id))
    unknown = api.post(ticket_url(CustomerFactory().id), **bearer(CustomerFactory()))

    assert anonymous.status_code == 401
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "event_not_found"
    assert get_redis().keys("fq:*wsticket*") == []


def test_a_ticket_opens_the_socket_once(api):
    event = make_event()
    customer, _ = join(event)
    ticket = api.post(ticket_url(event.id), **bearer(customer)).json()["ticket"]
    path = f"/ws/events/{event.id}/queue/?ticket={ticket}"

    first = close_code(path)
    second = close_code(path)

    assert first is None  # open: the snapshot came
    assert second == 4401
    assert get_redis().keys("fq:*wsticket*") == []


def test_the_24_hour_customer_token_no_longer_opens_the_socket():
    event = make_event()
    customer, _ = join(event)
    token, _ = customer_token_issue(customer_id=customer.id, email=customer.email)

    as_token = close_code(f"/ws/events/{event.id}/queue/?token={token}")
    as_ticket = close_code(f"/ws/events/{event.id}/queue/?ticket={token}")

    assert (as_token, as_ticket) == (4401, 4401)


def test_an_expired_ticket_is_refused():
    event = make_event()
    customer, _ = join(event)
    ticket = services.ws_ticket_issue(event_id=event.id, customer_id=customer.id).ticket
    for key in get_redis().keys("fq:*wsticket*"):
        get_redis().pexpire(key, 1)  # its time is up

    assert close_code(f"/ws/events/{event.id}/queue/?ticket={ticket}", None) == 4401


def test_a_ticket_opens_only_its_own_events_socket_and_is_not_spent_elsewhere():
    event, other = make_event(), make_event()
    customer, _ = join(event)
    ticket = services.ws_ticket_issue(event_id=event.id, customer_id=customer.id).ticket

    elsewhere = close_code(f"/ws/events/{other.id}/queue/?ticket={ticket}")
    home = close_code(f"/ws/events/{event.id}/queue/?ticket={ticket}")

    assert (elsewhere, home) == (4401, None)


def test_a_foreign_origin_is_refused_before_the_ticket_is_spent(settings):
    settings.ALLOWED_HOSTS = ["tickets.example.com"]
    settings.PUBLIC_BASE_URL = "https://tickets.example.com"
    event = make_event()
    customer, _ = join(event)
    ticket = services.ws_ticket_issue(event_id=event.id, customer_id=customer.id).ticket
    path = f"/ws/events/{event.id}/queue/?ticket={ticket}"

    foreign = close_code(path, origin="https://evil.example.net")
    own = close_code(path, origin="https://tickets.example.com")

    assert (foreign, own) == (4403, None)


def test_tickets_that_cannot_be_checked_close_with_try_again(monkeypatch, closed_port):
    event = make_event()
    dead = redis.Redis.from_url(f"redis://127.0.0.1:{closed_port}/0", socket_connect_timeout=0.2)
    monkeypatch.setattr(ws_tickets, "_store", WsTicketStore(client=dead))

    assert close_code(f"/ws/events/{event.id}/queue/?ticket=anything") == 4503


def test_ticket_issue_answers_busy_when_redis_is_down(api, monkeypatch, closed_port):
    event = make_event()
    customer, _ = join(event)
    dead = redis.Redis.from_url(f"redis://127.0.0.1:{closed_port}/0", socket_connect_timeout=0.2)
    monkeypatch.setattr(ws_tickets, "_store", WsTicketStore(client=dead))

    response = api.post(ticket_url(event.id), **bearer(customer))

    assert response.status_code == 503
    assert response["Retry-After"] == "1"


# --- one ticket, many sockets at once: one wins ---------------------------------------


def test_race_shown_without_the_guard_a_read_then_delete_redeem_lets_two_in():
    event = make_event()
    customer, _ = join(event)
    ticket = services.ws_ticket_issue(event_id=event.id, customer_id=customer.id).ticket
    key = WsTicketStore.key(event.id, ticket)
    barrier = threading.Barrier(4)

    def naive_redeem() -> str | None:
        owner = get_redis().get(key)
        barrier.wait()  # everyone has read before anyone deletes
        get_redis().delete(key)
        return owner

    results = race_calls(naive_redeem, [{}] * 4).results()

    assert results == [str(customer.id)] * 4  # one ticket, four sockets


def test_parallel_redeems_of_one_ticket_let_exactly_one_in():
    event = make_event()
    customer, _ = join(event)
    ticket = services.ws_ticket_issue(event_id=event.id, customer_id=customer.id).ticket

    results = race_calls(
        services.ws_ticket_redeem, [{"event_id": event.id, "ticket": ticket}] * 8
    ).results()

    assert results.count(customer.id) == 1
    assert results.count(None) == 7
