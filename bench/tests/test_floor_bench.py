"""bench/floor_urls.py, the floor the waiting-room benchmark reads the join and
the position read against: its views do the baseline's INSERT + ZADD and one
ZRANK, so a change to the queue's table or keys that breaks the benchmark shows
here; and they exist only under the benchmark's urlconf, never the product's."""

from __future__ import annotations

import pytest
from django.test import Client

from queueing.models import QueueEntry
from queueing.store import queue_store
from tests.support.factories import CustomerFactory, EventFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def floor(settings) -> Client:
    settings.ROOT_URLCONF = "bench.floor_urls"
    return Client()


def test_a_floor_join_writes_what_a_join_writes_and_the_floor_read_finds_it(floor):
    event = EventFactory()
    first, second = CustomerFactory(), CustomerFactory()
    for customer in (first, second):
        answer = floor.post(
            f"/api/v1/floor/{event.id}/join/", HTTP_AUTHORIZATION=f"Bearer {customer.id}"
        )
        assert answer.status_code == 201
    entries = QueueEntry.objects.filter(event=event).order_by("score")
    assert [e.customer_id for e in entries] == [first.id, second.id]
    assert {e.status for e in entries} == {"WAITING"}
    store = queue_store()
    assert store.r.zscore(store.waiting_key(event.id), str(second.id)) == entries[1].score

    read = floor.get(
        f"/api/v1/floor/{event.id}/position/", HTTP_AUTHORIZATION=f"Bearer {second.id}"
    )
    assert read.status_code == 200
    assert read.json() == {"position": 2}
    stranger = floor.get(
        f"/api/v1/floor/{event.id}/position/", HTTP_AUTHORIZATION=f"Bearer {CustomerFactory().id}"
    )
    assert stranger.status_code == 404
    assert floor.get(f"/api/v1/floor/{event.id}/empty/").json() == {"ok": True}


def test_the_real_api_is_served_beside_the_floor(floor):
    event = EventFactory()
    assert floor.get("/healthz").status_code == 200
    assert floor.get(f"/api/v1/events/{event.id}/queue/position/").status_code == 401


def test_the_product_does_not_serve_the_floor():
    event = EventFactory()
    answer = Client().post(f"/api/v1/floor/{event.id}/join/")
    assert answer.status_code == 404
    assert not QueueEntry.objects.exists()
