"""Asking for more tickets than remain, while some do: 409
not_enough_tickets with how many are left (``details.available``), the
event still on sale and nothing held; "sold out" (410) only when none is
left. Whichever part says "not enough": the Redis counter, the Postgres
guard behind an inflated counter, or Postgres alone with Redis down."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

from claims.models import Claim
from claims.services import claim_create
from claims.services.refusals import SOLD_OUT_FIRST_ON_WAITLIST
from events.models import Event
from fairqueue.redis import get_redis
from inventory.models import Ticket
from inventory.store import inventory_store
from queueing.models import QueueEntry
from tests.support.factories import bearer
from tests.support.sales import (
    admit_directly,
    counter,
    in_flight,
    make_customers,
    on_sale,
    on_sale_reserved,
)

pytestmark = pytest.mark.django_db(transaction=True)


def post_claim(api, tier, admitted, quantity):
    return api.post(
        f"/api/v1/events/{tier.event_id}/claims/",
        {"admission_token": admitted.token, "tier_id": str(tier.id), "quantity": quantity},
        format="json",
        **bearer(admitted.customer),
    )


def two_left_of(tier):
    """All but two of the tier's tickets held by a first customer; returns a
    second admitted customer (who may buy up to 4)."""
    Event.objects.filter(pk=tier.event_id).update(max_tickets_per_customer=4)
    first, second = admit_directly(tier.event, make_customers(2))
    claim_create(
        event_id=tier.event_id,
        customer_id=first.customer.id,
        admission_token=first.token,
        tier_id=tier.id,
        quantity=tier.inventory - 2,
    )
    return second


def assert_offered_two_and_nothing_held(response, tier, admitted, *, counter_value):
    assert response.status_code == 409, response.json()
    error = response.json()["error"]
    assert (error["code"], error["details"]) == ("not_enough_tickets", {"available": 2})
    assert "2" in error["message"]
    assert Claim.objects.filter(customer=admitted.customer).count() == 0
    assert Ticket.objects.filter(tier=tier, claim__isnull=True).count() == 2
    assert Event.objects.get(pk=tier.event_id).status == "ACTIVE"
    assert QueueEntry.objects.get(pk=admitted.entry.pk).status == "ADMITTED"
    assert counter(tier) == counter_value
    assert in_flight(tier) == []


def test_the_counter_saying_not_enough_answers_how_many_are_left(api):
    tier = on_sale(tickets=5)
    buyer = two_left_of(tier)
    assert counter(tier) == 2

    response = post_claim(api, tier, buyer, 3)

    assert_offered_two_and_nothing_held(response, tier, buyer, counter_value=2)
    # The offer is good: the same admission takes the two.
    taken = post_claim(api, tier, buyer, 2)
    assert taken.status_code == 201, taken.json()
    assert Ticket.objects.filter(tier=tier, claim__isnull=True).count() == 0
    assert Event.objects.get(pk=tier.event_id).status == "SOLD_OUT"


def test_the_postgres_guard_behind_an_inflated_counter_answers_the_same(api):
    tier = on_sale(tickets=5)
    buyer = two_left_of(tier)
    get_redis().set(inventory_store().counter_key(tier.event_id, tier.id), 100)

    response = post_claim(api, tier, buyer, 3)

    assert_offered_two_and_nothing_held(response, tier, buyer, counter_value=100)


def test_postgres_alone_answers_the_same_with_redis_down(api, own_redis):
    tier = on_sale(tickets=5)
    buyer = two_left_of(tier)
    own_redis.stop()

    response = post_claim(api, tier, buyer, 3)

    own_redis.start()
    assert_offered_two_and_nothing_held(response, tier, buyer, counter_value=None)


def test_best_available_seats_answer_the_same(api):
    tier = on_sale_reserved(rows=1, seats_per_row=5)
    buyer = two_left_of(tier)
    assert counter(tier) == 2

    response = post_claim(api, tier, buyer, 3)

    assert_offered_two_and_nothing_held(response, tier, buyer, counter_value=2)


def test_none_left_is_still_410_sold_out(api):
    tier = on_sale(tickets=4)
    buyer = two_left_of(tier)
    last = admit_directly(tier.event, make_customers(1))[0]
    assert post_claim(api, tier, last, 2).status_code == 201
    # The claim read the event before it sold out (its tier cache).
    Event.objects.filter(pk=tier.event_id).update(status="ACTIVE")

    response = post_claim(api, tier, buyer, 1)

    assert response.status_code == 410
    assert response.json()["error"] == {
        "code": "sold_out", "message": SOLD_OUT_FIRST_ON_WAITLIST, "details": {}
    }  # fmt: skip
    assert Claim.objects.filter(customer=buyer.customer).count() == 0
    assert Event.objects.get(pk=tier.event_id).status == "SOLD_OUT"


def test_the_schema_lists_the_code_and_the_claim_documents_it():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    assert "not_enough_tickets" in schema["components"]["schemas"]["ErrorCodeEnum"]["enum"]
    answers = schema["paths"]["/api/v1/events/{event_id}/claims/"]["post"]["responses"]
    assert "not_enough_tickets" in answers["409"]["description"]
