import uuid

import pytest

from inventory.store import InventoryStore
from tests.support.factories import EventFactory, TierFactory
from tests.support.sales import hold_tickets

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
        {
            "id": str(tier.id),
            "name": tier.name,
            "price": 250_000,
            "inventory": 7,
            "available": 7,
            "kind": "general",
        }
    ]


def test_unknown_event_is_404_envelope(api):
    response = api.get(f"/api/v1/events/{uuid.uuid4()}/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "event_not_found"


def test_bad_uuid_is_404_envelope(api):
    response = api.get("/api/v1/events/not-a-uuid/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_a_draft_is_not_found(api):
    draft = EventFactory(status="DRAFT")
    response = api.get(f"/api/v1/events/{draft.id}/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "event_not_found"


def test_list_shows_every_status_but_draft(api):
    shown = {EventFactory(status=s).id for s in ("ACTIVE", "PAUSED", "SOLD_OUT", "ENDED")}
    EventFactory(status="DRAFT")
    response = api.get("/api/v1/events/")
    assert {uuid.UUID(e["id"]) for e in response.json()["results"]} == shown


def test_availability_falls_back_to_postgres_without_a_redis_counter(api, redis_clean):
    tier = TierFactory(inventory=7)
    hold_tickets(tier, 3)
    redis_clean.flushdb()

    response = api.get(f"/api/v1/events/{tier.event_id}/")

    assert response.json()["tiers"][0]["available"] == 4


def test_availability_reads_the_redis_counter_when_present(api):
    tier = TierFactory(inventory=7)
    InventoryStore().sync(
        event_id=tier.event_id, tier_id=tier.id, free_in_postgres=5, returned_before=0
    )

    response = api.get(f"/api/v1/events/{tier.event_id}/")

    assert response.json()["tiers"][0]["available"] == 5
