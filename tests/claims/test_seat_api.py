"""Reserved seating over HTTP: the seat map read and the claim of chosen
seats, with the error envelope for every refusal."""

from __future__ import annotations

import gzip
import json
import time

import pytest

import events.selectors
from claims.models import Claim
from claims.services import claim_confirm
from fairqueue.redis import get_redis
from inventory.models import Ticket
from inventory.seating import seatmap
from inventory.seating.seatmap import seat_map_store
from tests.support.factories import bearer
from tests.support.sales import (
    admit_directly,
    claim_seats,
    make_customers,
    on_sale,
    on_sale_reserved,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _no_rebuild_throttle(monkeypatch):
    """Rebuilds are throttled to one per REBUILD_EVERY_MS; these tests read
    right after a change and want it at once."""
    monkeypatch.setattr(seatmap, "REBUILD_EVERY_MS", 1)


@pytest.fixture
def tier():
    return on_sale_reserved(rows=2, seats_per_row=4, max_tickets_per_customer=2)


def seat_map(api, tier):
    return api.get(f"/api/v1/events/{tier.event_id}/tiers/{tier.id}/seats/")


def statuses(body) -> dict[str, str]:
    return {seat["label"]: seat["status"] for seat in body["seats"]}


def post_seats(api, tier, admitted, seats):
    return api.post(
        f"/api/v1/events/{tier.event_id}/claims/",
        {"admission_token": admitted.token, "tier_id": str(tier.id), "seats": seats},
        format="json",
        **bearer(admitted.customer),
    )


def test_the_seat_map_lists_every_seat_with_its_status(api, tier):
    response = seat_map(api, tier)
    assert response.status_code == 200
    body = response.json()
    assert body["tier_id"] == str(tier.id)
    assert isinstance(body["version"], int)
    assert len(body["seats"]) == 8
    assert body["seats"][0] == {
        "label": "A-1",
        "section": "",
        "row": "A",
        "number": 1,
        "x": 1,
        "y": 1,
        "status": "available",
        "accessible": False,
        "restricted_view": False,
    }


def test_held_sold_and_blocked_seats_show_and_the_version_grows(api, tier):
    first = seat_map(api, tier).json()
    buyers = admit_directly(tier.event, make_customers(2))
    claim_seats(tier, buyers[0], ["A-1"])
    sold = claim_seats(tier, buyers[1], ["B-2", "B-3"])
    claim_confirm(claim_id=sold.pk)
    Ticket.objects.filter(tier=tier, label="A-4").update(blocked=True)
    # A block made outside the services moves no version: the cached map
    # stays until a change that does.
    claim_seats(tier, admit_directly(tier.event, make_customers(1))[0], ["A-2"])
    time.sleep(0.01)
    second = seat_map(api, tier).json()
    assert second["version"] > first["version"]
    got = statuses(second)
    assert (got["A-1"], got["A-2"], got["B-2"], got["B-3"], got["A-4"], got["B-1"]) == (
        "held", "held", "sold", "sold", "blocked", "available"
    )  # fmt: skip


def test_a_current_map_is_served_from_redis_alone(
    api, tier, django_assert_num_queries, monkeypatch
):
    monkeypatch.setattr(events.selectors, "TIER_CACHE_SECONDS", 60)  # cached per process
    seat_map(api, tier)  # built and stored
    stored = get_redis().get(seat_map_store().keys(tier.event_id, tier.id)[0])
    assert stored is not None and stored.startswith(f"{seat_map(api, tier).json()['version']}:")
    with django_assert_num_queries(0):
        assert seat_map(api, tier).status_code == 200


def test_the_map_is_read_from_postgres_when_redis_is_wiped(api, tier):
    buyer = admit_directly(tier.event, make_customers(1))[0]
    before = seat_map(api, tier).json()["version"]
    claim_seats(tier, buyer, ["A-3"])
    get_redis().delete(*seat_map_store().keys(tier.event_id, tier.id))
    body = seat_map(api, tier).json()
    assert statuses(body)["A-3"] == "held"
    assert body["version"] > before


def test_a_general_tier_has_no_seat_map(api):
    general = on_sale(tickets=3)
    response = api.get(f"/api/v1/events/{general.event_id}/tiers/{general.id}/seats/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "tier_not_found"


def test_a_tier_of_another_event_is_404(api, tier):
    other = on_sale_reserved(rows=1, seats_per_row=1)
    response = api.get(f"/api/v1/events/{tier.event_id}/tiers/{other.id}/seats/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "tier_not_found"


def test_claiming_chosen_seats_answers_them(api, tier):
    buyer = admit_directly(tier.event, make_customers(1))[0]
    response = post_seats(api, tier, buyer, ["A-2", "A-3"])
    assert response.status_code == 201, response.json()
    body = response.json()
    assert sorted(body["seats"]) == ["A-2", "A-3"]
    assert body["quantity"] == 2
    detail = api.get(f"/api/v1/claims/{body['claim_id']}/", **bearer(buyer.customer)).json()
    assert sorted(detail["seats"]) == ["A-2", "A-3"]


def test_a_taken_seat_is_409_with_the_labels_and_nothing_held(api, tier):
    first, second = admit_directly(tier.event, make_customers(2))
    assert post_seats(api, tier, first, ["B-1"]).status_code == 201
    response = post_seats(api, tier, second, ["B-1", "B-2"])
    assert response.status_code == 409
    error = response.json()["error"]
    assert (error["code"], error["details"]) == ("seats_unavailable", {"seats": ["B-1"]})
    assert Claim.objects.filter(customer=second.customer).count() == 0
    assert Ticket.objects.filter(tier=tier, label="B-2", claim__isnull=True).exists()


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({"seats": []}, "invalid_quantity"),
        ({"seats": ["A-1", "A-1"]}, "invalid_quantity"),
        ({"seats": "A-1"}, "validation_error"),
        ({"seats": [1, None]}, "validation_error"),
        ({"seats": ["A-1"], "quantity": 2}, "validation_error"),
        ({}, "validation_error"),
        ({"seats": ["Q-9"]}, "seat_not_found"),
    ],
)
def test_bad_seat_input_is_422(api, tier, payload, code):
    buyer = admit_directly(tier.event, make_customers(1))[0]
    response = api.post(
        f"/api/v1/events/{tier.event_id}/claims/",
        {"admission_token": buyer.token, "tier_id": str(tier.id), **payload},
        format="json",
        **bearer(buyer.customer),
    )
    assert response.status_code in (400, 422), response.json()
    assert response.json()["error"]["code"] == code
    assert Claim.objects.count() == 0


def test_a_client_that_accepts_gzip_gets_the_map_as_cached(api, tier):
    plain = seat_map(api, tier)
    assert "gzip" not in plain.get("Content-Encoding", "")
    zipped = api.get(
        f"/api/v1/events/{tier.event_id}/tiers/{tier.id}/seats/", HTTP_ACCEPT_ENCODING="gzip, br"
    )
    assert zipped.status_code == 200
    assert zipped["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in zipped["Vary"]
    assert json.loads(gzip.decompress(zipped.content)) == plain.json()
