import uuid

import pytest

from tests.factories import EventFactory, TierFactory

pytestmark = pytest.mark.django_db


def test_list_hides_drafts(api):
    live = EventFactory()
    EventFactory(status="DRAFT")
    response = api.get("/api/v1/events/")
    assert response.status_code == 200
    assert [e["id"] for e in response.json()["results"]] == [str(live.id)]


def test_detail_shows_tiers_with_price_and_availability(api):
    tier = TierFactory(inventory=7, price=250_000)
    response = api.get(f"/api/v1/events/{tier.event_id}/")
    assert response.status_code == 200
    body = response.json()
    assert body["tiers"] == [
        {"id": str(tier.id), "name": tier.name, "price": 250_000, "inventory": 7, "available": 7}
    ]


def test_unknown_event_is_404_envelope(api):
    response = api.get(f"/api/v1/events/{uuid.uuid4()}/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "event_not_found"


def test_bad_uuid_is_404_envelope(api):
    response = api.get("/api/v1/events/not-a-uuid/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
