"""The pre-queue draw's public documents: GET events/{id}/queue/draw/{shard}/."""

from __future__ import annotations

import json
import threading
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from django.utils.crypto import salted_hmac

from bench.roundtrips import RoundTrips
from events.models import Event
from fairqueue.faults import InjectedFault, fault_armed
from queueing import services
from queueing.consumers import _position as socket_position
from queueing.models import QueueEntry
from queueing.services import draw as draw_module
from queueing.services.draw import KEY_SALT, draw_forget, draw_key, draw_place
from queueing.services.line_state import line_state_forget
from queueing.store import queue_store
from tests.support.factories import CustomerFactory, bearer
from tests.support.front import Front
from tests.support.sales import join, make_event

pytestmark = pytest.mark.django_db

PREQUEUED = 40
SHARDS = [f"{i:02x}" for i in range(256)]


def shard_url(event_id, shard: str) -> str:
    return f"/api/v1/events/{event_id}/queue/draw/{shard}/"


@pytest.fixture(autouse=True)
def _fresh_copies():
    draw_forget()
    line_state_forget()
    yield
    draw_forget()
    line_state_forget()


def prequeued_event(prequeued: int = PREQUEUED, late: int = 5):
    """A pre-queue of ``prequeued`` customers, then the sale starts and
    ``late`` more join. Paused: the draw happens, nobody is admitted."""
    event = make_event(
        tickets=100,
        sale_start=timezone.now() + timedelta(hours=1),
        prequeue_opens_at=timezone.now() - timedelta(minutes=10),
    )
    early = [join(event)[0] for _ in range(prequeued)]
    Event.objects.filter(pk=event.pk).update(
        sale_start=timezone.now() - timedelta(seconds=1), status="PAUSED"
    )
    later = [join(event)[0] for _ in range(late)]
    return event, early, later


@pytest.fixture
def drawn():
    event, early, late = prequeued_event()
    assert services.admission_tick_event(event_id=event.id).shuffled == PREQUEUED
    return event, early, late


def all_entries(client, event) -> dict[str, int]:
    entries: dict[str, int] = {}
    for shard in SHARDS:
        response = client.get(shard_url(event.id, shard))
        assert response.status_code == 200, response.content
        doc = json.loads(response.content)
        assert (doc["event_id"], doc["epoch"], doc["served"]) == (str(event.id), 1, 0)
        assert all(len(entry) == 14 for entry in doc["entries"])
        entries.update({f"{shard}{entry}": rank for entry, rank in doc["entries"].items()})
    return entries


def rank_of(event, customer) -> int:
    return QueueEntry.objects.get(event=event, customer=customer, prequeue=True).score


def looked_up(event, customer) -> str:
    shard, entry = draw_place(draw_key(event_id=event.id, customer_id=customer.id))
    return shard + entry


def test_the_draw_key_is_djangos_salted_hmac_of_the_event_and_customer():
    event_id, customer_id = uuid.uuid4(), uuid.uuid4()
    expected = salted_hmac(KEY_SALT, f"draw:{event_id}:{customer_id}", algorithm="sha256")
    assert draw_key(event_id=event_id, customer_id=customer_id) == expected.hexdigest()
    assert draw_key(event_id=event_id, customer_id=uuid.uuid4()) != expected.hexdigest()


def test_the_documents_give_every_prequeue_customer_its_rank_and_nothing_else(client, drawn):
    event, early, late = drawn
    entries = all_entries(client, event)
    assert entries == {looked_up(event, c): rank_of(event, c) for c in early}
    assert sorted(entries.values()) == list(range(1, PREQUEUED + 1))
    for customer in late:
        assert looked_up(event, customer) not in entries


def test_a_customer_who_left_after_the_draw_stays_in_the_documents(client, drawn):
    event, early, _ = drawn
    rank = rank_of(event, early[0])
    services.queue_abandon(event_id=event.id, customer_id=early[0].id)
    queue_store().r.delete(queue_store().draw_key(event.id))  # rebuilt from Postgres
    assert all_entries(client, event)[looked_up(event, early[0])] == rank


def test_the_documents_are_public_cacheable_and_the_same_bytes_for_everyone(api, client, drawn):
    event, early, _ = drawn
    shard = looked_up(event, early[0])[:2]
    anonymous = client.get(shard_url(event.id, shard))
    signed_in = api.get(shard_url(event.id, shard), **bearer(early[0]))
    client.cookies["sessionid"] = "someone"
    with_cookie = client.get(shard_url(event.id, shard), **bearer(early[1]))
    assert anonymous.content == signed_in.content == with_cookie.content
    for response in (anonymous, signed_in, with_cookie):
        assert response.status_code == 200
        assert response["Cache-Control"] == "public, max-age=300"
        assert response["Content-Type"] == "application/json"
        assert "Set-Cookie" not in response and response.cookies == {}
        vary = response.get("Vary", "")
        assert "Cookie" not in vary and "Authorization" not in vary
    text = anonymous.content.decode()
    for customer in early:  # no ids, no keys: hashes of the keys only
        assert str(customer.id) not in text
        assert draw_key(event_id=event.id, customer_id=customer.id) not in text


def test_the_key_is_in_the_customers_own_answers_only(api):
    now = timezone.now()
    event = make_event(
        tickets=10,
        prequeue_opens_at=now - timedelta(minutes=5),
        sale_start=now + timedelta(hours=1),
    )
    first, second = CustomerFactory(), CustomerFactory()
    url = f"/api/v1/events/{event.id}/queue/"
    joined = api.post(url, **bearer(first)).json()
    api.post(url, **bearer(second))
    key = draw_key(event_id=event.id, customer_id=first.id)
    assert joined["draw_key"] == key
    own = [
        api.get(url + "position/", **bearer(first)).json(),
        api.get(f"/api/v1/events/{event.id}/me/", **bearer(first)).json()["queue"],
        socket_position(event.id, first.id)[1],
    ]
    others = [
        api.get(url + "position/", **bearer(second)).json(),
        api.get(f"/api/v1/events/{event.id}/me/", **bearer(second)).json()["queue"],
        socket_position(event.id, second.id)[1],
    ]
    assert [a["draw_key"] for a in own] == [key] * 3
    assert all(a["draw_key"] not in (None, key) for a in others)
    # After the draw too (the number is a rank then).
    Event.objects.filter(pk=event.pk).update(sale_start=timezone.now(), status="PAUSED")
    services.admission_tick_event(event_id=event.id)
    after = api.get(url + "position/", **bearer(first)).json()
    assert (after["epoch"], after["draw_key"]) == (1, key)
    # A later joiner's number is no pre-queue one.
    late = CustomerFactory()
    assert api.post(url, **bearer(late)).json()["draw_key"] is None
    assert api.get(url + "position/", **bearer(late)).json()["draw_key"] is None


def test_an_event_without_a_pre_queue_gives_no_key(api):
    event = make_event(tickets=10)
    customer = CustomerFactory()
    joined = api.post(f"/api/v1/events/{event.id}/queue/", **bearer(customer)).json()
    assert joined["draw_key"] is None
    snapshot = api.get(f"/api/v1/events/{event.id}/queue/position/", **bearer(customer)).json()
    assert snapshot["draw_key"] is None


def test_before_the_draw_and_for_bad_shards_404_with_the_envelope(client):
    event, _, _ = prequeued_event(prequeued=3, late=0)
    Event.objects.filter(pk=event.pk).update(sale_start=timezone.now() + timedelta(hours=1))
    response = client.get(shard_url(event.id, "00"))
    assert (response.status_code, response.json()["error"]["code"]) == (404, "draw_not_made")
    services.admission_tick_event(event_id=event.id)  # before the start: no draw
    assert client.get(shard_url(event.id, "00")).json()["error"]["code"] == "draw_not_made"
    for shard in ("0", "000", "0g", "AB", "zz", "-1"):
        response = client.get(shard_url(event.id, shard))
        assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")
    response = client.get(shard_url(uuid.uuid4(), "00"))
    assert (response.status_code, response.json()["error"]["code"]) == (404, "event_not_found")
    response = client.post(shard_url(event.id, "00"))
    assert response.status_code == 405


def test_the_web_server_answers_a_shard_before_django_one_redis_read_per_process(client, drawn):
    event, _, _ = drawn
    via_django = client.get(shard_url(event.id, "3a"))
    draw_forget()  # another process: nothing held yet
    front = Front()
    for reads in (1, 0, 0):  # the document never changes: held once read
        with RoundTrips() as counted:
            body = front.get(shard_url(event.id, "3a"))
        assert (body, front.answered["status"]) == (via_django.content, "200 OK")
        assert (counted.redis, counted.postgres) == (reads, 0)
    django_headers = {k: v for k, v in via_django.items() if k != "X-Request-ID"}
    assert front.answered["headers"] == django_headers
    assert front.passed_on == []
    front.get(shard_url(event.id, "3A"))
    front.get(shard_url(event.id, "3a"), method="HEAD")
    front.get(shard_url(uuid.uuid4(), "3a"))
    assert len(front.passed_on) == 3


def test_a_draw_whose_redis_write_failed_is_written_by_the_next_tick(client, fault_hooks):
    event, early, _ = prequeued_event()
    with fault_armed("queue.prequeue.after_commit"), pytest.raises(InjectedFault):
        services.admission_tick_event(event_id=event.id)
    assert queue_store().draw_shard(event_id=event.id, shard="00") is None
    services.admission_tick_event(event_id=event.id)
    assert queue_store().draw_shard(event_id=event.id, shard="00") is not None
    assert all_entries(client, event) == {looked_up(event, c): rank_of(event, c) for c in early}


@pytest.mark.django_db(transaction=True)
def test_redis_wiped_the_documents_are_rebuilt_once_for_a_crowd(monkeypatch):
    event, _, _ = prequeued_event(prequeued=300, late=0)
    services.admission_tick_event(event_id=event.id)
    before = {s: queue_store().draw_shard(event_id=event.id, shard=s) for s in SHARDS}
    queue_store().r.flushdb()  # Redis wiped
    draw_forget()  # and a process that held nothing
    built = []
    build = draw_module.draw_docs

    def counted(**kwargs):
        built.append(kwargs)
        return build(**kwargs)

    monkeypatch.setattr(draw_module, "draw_docs", counted)
    barrier = threading.Barrier(16)
    answers: dict[str, tuple[int, bytes, str | None]] = {}

    def read(shard: str) -> None:
        barrier.wait()
        response = Client().get(shard_url(event.id, shard))
        answers[shard] = (response.status_code, response.content, response.get("Retry-After"))

    threads = [threading.Thread(target=read, args=(s,)) for s in SHARDS[:16]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 1
    for shard, (status, content, retry_after) in answers.items():
        if status == 200:
            assert content.decode() == before[shard]
        else:  # its page retries, or learns its number the authenticated way
            assert (status, json.loads(content)["error"]["code"], retry_after) == (
                503,
                "busy",
                "1",
            )
    assert any(status == 200 for status, _, _ in answers.values())
    after = {s: queue_store().draw_shard(event_id=event.id, shard=s) for s in SHARDS}
    assert after == before
    draw_forget()
    assert all(Client().get(shard_url(event.id, s)).status_code == 200 for s in SHARDS)
    assert len(built) == 1


def test_with_redis_down_a_process_builds_the_documents_itself(client, request):
    event, early, _ = prequeued_event()
    services.admission_tick_event(event_id=event.id)
    expected = {looked_up(event, c): rank_of(event, c) for c in early}
    request.getfixturevalue("dead_redis")
    assert all_entries(client, event) == expected
