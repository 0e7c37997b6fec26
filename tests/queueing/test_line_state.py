"""The public line state: GET events/{id}/queue/state/."""

from __future__ import annotations

import json
import time
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from bench.roundtrips import RoundTrips
from events.models import Event
from queueing import services
from queueing.models import QueueEntry
from queueing.services.line_state import line_state_forget
from queueing.store import queue_store
from tests.support.factories import CustomerFactory, EventFactory, TierFactory, bearer
from tests.support.front import Front
from tests.support.sales import join, make_event

pytestmark = pytest.mark.django_db


def state_url(event_id):
    return f"/api/v1/events/{event_id}/queue/state/"


@pytest.fixture(autouse=True)
def _fresh_state_cache():
    line_state_forget()
    yield
    line_state_forget()


def read_state(client, event_id, **headers):
    response = client.get(state_url(event_id), **headers)
    assert response.status_code == 200, response.content
    return response


def test_state_is_public_cacheable_and_the_same_bytes_for_everyone(api, client):
    event = make_event(tickets=10, admission_batch_size=2)
    customers = [join(event)[0] for _ in range(5)]
    services.admission_tick_event(event_id=event.id)

    anonymous = read_state(client, event.id)
    signed_in = read_state(api, event.id, **bearer(customers[0]))
    client.cookies["sessionid"] = "someone"
    with_cookie = read_state(client, event.id, **bearer(customers[3]))

    assert anonymous.content == signed_in.content == with_cookie.content
    for response in (anonymous, signed_in, with_cookie):
        assert response["Cache-Control"] == "public, max-age=1"
        assert response["Content-Type"] == "application/json"
        assert "Set-Cookie" not in response
        assert response.cookies == {}
        vary = response.get("Vary", "")
        assert "Cookie" not in vary and "Authorization" not in vary
    body = json.loads(anonymous.content)
    assert body["event_id"] == str(event.id)
    assert body["status"] == "ACTIVE"
    assert body["served"] == 2
    assert body["waiting"] == 3
    assert body["epoch"] == 0
    assert body["admission_batch_size"] == 2
    # Nothing of any one customer: no ids, no tokens.
    for customer in customers:
        assert str(customer.id) not in anonymous.content.decode()


def test_state_read_is_one_redis_read_then_none_until_the_next_tick(
    client, django_assert_num_queries
):
    event = make_event(tickets=10)
    join(event)
    services.admission_tick_event(event_id=event.id)
    with RoundTrips() as counted, django_assert_num_queries(0):
        first = read_state(client, event.id).content
    assert (counted.redis, counted.postgres) == (1, 0)
    with RoundTrips() as counted:
        assert read_state(client, event.id).content == first
    assert (counted.redis, counted.postgres) == (0, 0)  # held until the next tick is due
    # A tick in this process lets go of it at once (another process's tick:
    # when the next tick was due).
    services.admission_tick_event(event_id=event.id)
    with RoundTrips() as counted:
        assert read_state(client, event.id).content != first
    assert counted.redis == 1


def test_a_held_state_is_read_again_once_its_next_tick_is_due(client, monkeypatch):
    event = make_event(tickets=10)
    services.admission_tick_event(event_id=event.id)
    read_state(client, event.id)
    state = json.loads(queue_store().state(event_id=event.id))
    monkeypatch.setattr(time, "time", lambda: state["next_tick_at"] / 1000 + 0.01)
    with RoundTrips() as counted:
        read_state(client, event.id)
    assert counted.redis == 1


def test_the_web_server_answers_it_before_django_with_the_views_headers(client):
    event = make_event(tickets=10)
    services.admission_tick_event(event_id=event.id)
    via_django = read_state(client, event.id)
    front = Front()
    with RoundTrips() as counted:
        body = front.get(state_url(event.id))
    assert (body, front.answered["status"]) == (via_django.content, "200 OK")
    assert counted.redis == 0  # the copy the Django read left in this process
    # The same headers, but the request log's id: it is not in the request log.
    django_headers = {k: v for k, v in via_django.items() if k != "X-Request-ID"}
    assert front.answered["headers"] == django_headers
    assert int(front.answered["headers"]["Content-Length"]) == len(body)
    assert front.passed_on == []
    # Everything else goes to Django: another path, HEAD, a state Redis does
    # not have (Django builds it), a malformed id.
    unknown = uuid.uuid4()
    front.get(f"/api/v1/events/{event.id}/queue/position/")
    front.get(state_url(event.id), method="HEAD")
    front.get(state_url(unknown))
    front.get("/api/v1/events/not-a-uuid-at-all-not-a-uuid-at-all-xx/queue/state/")
    assert len(front.passed_on) == 4


def test_the_frontier_passes_a_score_exactly_when_its_customer_is_admitted(client):
    """Ticks admit the lowest (score, customer) first: a page that knows its
    score learns its admission from the frontier, never early, never late."""
    event = make_event(tickets=40, admission_batch_size=4)
    customers = [join(event)[0] for _ in range(11)]
    # Two customers on the same score: the tie is broken by customer id.
    tied = sorted(customers[5:7], key=lambda c: str(c.id))
    score = QueueEntry.objects.get(event=event, customer=tied[0]).score
    QueueEntry.objects.filter(event=event, customer=tied[1]).update(score=score)
    queue_store().rescore(event_id=event.id, customer_id=tied[1].id, score=score)
    scores = {
        e.customer_id: e.score for e in QueueEntry.objects.filter(event=event, status="WAITING")
    }
    frontiers = []
    for _ in range(3):
        services.admission_tick_event(event_id=event.id)
        body = json.loads(read_state(client, event.id).content)
        frontiers.append(body["frontier"])
        admitted = set(
            QueueEntry.objects.filter(event=event, status="ADMITTED").values_list(
                "customer_id", flat=True
            )
        )
        assert body["served"] == len(admitted)
        for customer_id, own in scores.items():
            if customer_id in admitted:
                assert own <= body["frontier"]
            elif customer_id != tied[1].id or tied[0].id not in admitted:
                assert own > body["frontier"], (customer_id, own, body["frontier"])
            else:  # the tie: the frontier equals its score, the page asks, it is WAITING
                assert own == body["frontier"]
    assert frontiers == sorted(frontiers)
    assert len(set(frontiers)) == 3


def test_a_missing_state_is_built_from_postgres_stored_and_answered(client):
    event = make_event(tickets=10, admission_batch_size=3)
    for _ in range(5):
        join(event)
    services.admission_tick_event(event_id=event.id)
    ticked = json.loads(read_state(client, event.id).content)
    store = queue_store()
    store.r.flushdb()  # Redis wiped
    line_state_forget()  # (this process held the state until the next tick)

    built = json.loads(read_state(client, event.id).content)

    for field in ("served", "frontier", "status", "epoch", "admission_batch_size"):
        assert built[field] == ticked[field], field
    assert built["waiting"] == 2  # from Postgres: the line is not rebuilt yet
    assert built["rate_per_second"] is None  # the measured rate went with Redis
    assert json.loads(store.state(event_id=event.id)) == built
    # The next tick writes its own over it.
    services.admission_tick_event(event_id=event.id)
    after = json.loads(read_state(client, event.id).content)
    assert after["at"] >= built["at"] and after["served"] == 5


def test_a_rebuilt_state_never_replaces_one_a_tick_wrote(client):
    event = make_event(tickets=10)
    join(event)
    services.admission_tick_event(event_id=event.id)
    store = queue_store()
    ticked = store.state(event_id=event.id)
    store.state_add(event_id=event.id, body='{"stale":true}', ttl_ms=5000)
    assert store.state(event_id=event.id) == ticked


def test_the_pre_queue_draw_changes_the_epoch_and_the_numbers_learnt_after_it():
    now = timezone.now()
    event = make_event(
        tickets=10,
        prequeue_opens_at=now - timedelta(minutes=5),
        sale_start=now + timedelta(minutes=5),
    )
    customers = [join(event)[0] for _ in range(4)]
    before = services.queue_position(event_id=event.id, customer_id=customers[0].id)
    assert before.epoch == 0 and before.score is not None
    Event.objects.filter(pk=event.pk).update(sale_start=timezone.now())
    services.admission_tick_event(event_id=event.id)
    state = json.loads(queue_store().state(event_id=event.id))
    assert state["epoch"] == 1
    for customer in customers:
        after = services.queue_position(event_id=event.id, customer_id=customer.id)
        entry = QueueEntry.objects.get(event=event, customer=customer)
        if entry.status == "WAITING":
            assert (after.epoch, after.score) == (1, entry.score)
            assert 1 <= after.score <= 4  # the draw's ranks


def test_the_state_says_when_to_come_back_after_the_draw(settings):
    settings.QUEUE_RELEARN_PER_SECOND = 2
    event = make_event(tickets=1, admission_batch_size=1)
    for _ in range(41):
        join(event)
    services.admission_tick_event(event_id=event.id)
    state = json.loads(queue_store().state(event_id=event.id))
    assert state["waiting"] == 40
    assert state["relearn_within_seconds"] == 20  # 40 pages, 2 a second
    assert state["next_tick_at"] - state["at"] == 5000


def test_an_ended_sale_reads_ended(client):
    event = make_event(tickets=10)
    join(event)
    services.admission_tick_event(event_id=event.id)
    read_state(client, event.id)
    services.queue_close(event_id=event.id)  # drops the event's keys, the state too
    Event.objects.filter(pk=event.pk).update(status="ENDED")
    assert queue_store().state(event_id=event.id) is None
    line_state_forget()  # a process holds its copy until the next tick was due
    body = json.loads(read_state(client, event.id).content)
    assert (body["status"], body["waiting"]) == ("ENDED", 0)


def test_unknown_and_draft_events_are_404_with_the_envelope(client):
    draft = EventFactory(status="DRAFT")
    TierFactory(event=draft)
    for event_id in (uuid.uuid4(), draft.id):
        response = client.get(state_url(event_id))
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "event_not_found"
        assert queue_store().state(event_id=event_id) is None


def test_only_get_is_answered(client):
    event = make_event()
    response = client.post(state_url(event.id))
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert queue_store().state(event_id=event.id) is None


def test_join_and_snapshot_give_the_number_the_state_is_read_with(api):
    event = make_event(tickets=10, admission_batch_size=1)
    first, second = CustomerFactory(), CustomerFactory()
    api.post(f"/api/v1/events/{event.id}/queue/", **bearer(first))
    joined = api.post(f"/api/v1/events/{event.id}/queue/", **bearer(second)).json()
    entry = QueueEntry.objects.get(event=event, customer=second)
    assert (joined["score"], joined["epoch"], joined["position"]) == (entry.score, 0, 2)
    services.admission_tick_event(event_id=event.id)
    snapshot = api.get(f"/api/v1/events/{event.id}/queue/position/", **bearer(second)).json()
    assert (snapshot["score"], snapshot["epoch"]) == (entry.score, 0)
    # The place a page computes from the state is the snapshot's.
    state = json.loads(queue_store().state(event_id=event.id))
    assert joined["position"] - (state["served"] - joined["served"]) == snapshot["position"] == 1
    assert state["frontier"] < joined["score"]
