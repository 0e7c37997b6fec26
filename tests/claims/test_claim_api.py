"""POST /events/{id}/claims/, GET and DELETE /claims/{id}/ over the API."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from claims.domain import ClaimStatus
from claims.models import Claim
from claims.services.claiming import claim_lock_key
from events.models import Event
from fairqueue.redis import get_redis
from inventory.models import Ticket
from queueing.models import QueueEntry
from queueing.services.waitlist import waitlist_place
from queueing.store import queue_store
from tests.support.factories import CustomerFactory, TierFactory, bearer
from tests.support.sales import admit_directly, counter, in_flight, on_sale

pytestmark = pytest.mark.django_db


def claim(api, tier, admitted, *, quantity=1, tier_id=None, token=None, event_id=None):
    return api.post(
        f"/api/v1/events/{event_id or tier.event_id}/claims/",
        {
            "admission_token": token or admitted.token,
            "tier_id": str(tier_id or tier.id),
            "quantity": quantity,
        },
        format="json",
        **bearer(admitted.customer),
    )


def assert_nothing_claimed(tier, admitted, *, counter_value, admission="ADMITTED"):
    assert Claim.objects.count() == 0
    assert Ticket.objects.filter(tier=tier, claim__isnull=False).count() == 0
    assert counter(tier) == counter_value
    assert in_flight(tier) == []
    assert QueueEntry.objects.get(pk=admitted.entry.pk).status == admission


def assert_first_on_the_waiting_list(tier, admitted):
    """Nothing left at all: the admission ended (sold_out) and the customer
    is first on the event's waiting list."""
    entry = QueueEntry.objects.get(pk=admitted.entry.pk)
    assert (entry.status, entry.end_reason) == ("EXPIRED", "sold_out")
    place = waitlist_place(event_id=tier.event_id, customer_id=admitted.customer.id)
    assert (place.status, place.position) == ("waiting", 1)


def test_claim_takes_tickets_and_completes_the_admission(api, tier, buyer):
    Event.objects.filter(pk=tier.event_id).update(max_tickets_per_customer=2, currency="NGN")
    before = timezone.now()
    response = claim(api, tier, buyer, quantity=2)
    assert response.status_code == 201, response.json()
    body = response.json()
    made = Claim.objects.get()
    assert body == {
        "claim_id": str(made.id),
        "status": "CLAIMED",
        "tier_id": str(tier.id),
        "quantity": 2,
        "seats": [],
        "amount": 1_000_000,
        "currency": "NGN",
        "expires_at": body["expires_at"],
    }
    ttl = made.expires_at - before
    assert timedelta(seconds=599) <= ttl <= timedelta(seconds=601)
    assert set(Ticket.objects.filter(claim=made).values_list("tier_id", flat=True)) == {tier.id}
    assert Ticket.objects.filter(claim=made).count() == 2
    assert Ticket.objects.filter(tier=tier, claim__isnull=True).count() == 8
    assert counter(tier) == 8
    assert in_flight(tier) == []
    assert QueueEntry.objects.get(pk=buyer.entry.pk).status == "COMPLETED"
    admitted_key = queue_store().admitted_key(tier.event_id)
    assert queue_store().r.zscore(admitted_key, str(buyer.customer.id)) is None
    reservations = set(Ticket.objects.filter(claim=made).values_list("reservation_id", flat=True))
    assert len(reservations) == 1 and "" not in reservations


def test_claim_ttl_comes_from_settings(api, tier, buyer, settings):
    settings.CLAIM_TTL_SECONDS = 30
    before = timezone.now()
    assert claim(api, tier, buyer).status_code == 201
    ttl = Claim.objects.get().expires_at - before
    assert timedelta(seconds=29) <= ttl <= timedelta(seconds=31)


def test_without_a_customer_token_it_is_401(api, tier, buyer):
    response = api.post(
        f"/api/v1/events/{tier.event_id}/claims/",
        {"admission_token": buyer.token, "tier_id": str(tier.id), "quantity": 1},
        format="json",
    )
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
    assert_nothing_claimed(tier, buyer, counter_value=10)


def test_a_forged_admission_token_is_401(api, tier, buyer):
    response = claim(api, tier, buyer, token=buyer.token[:-4] + "AAAA")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_token"
    assert_nothing_claimed(tier, buyer, counter_value=10)


def test_someone_elses_admission_token_is_403(api, tier, buyer):
    thief = admit_directly(tier.event, [CustomerFactory()])[0]
    response = claim(api, tier, thief, token=buyer.token)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "admission_invalid"
    assert_nothing_claimed(tier, buyer, counter_value=10)


def test_an_expired_admission_is_403_admission_expired(api, tier, buyer):
    QueueEntry.objects.filter(pk=buyer.entry.pk).update(status="EXPIRED")
    queue_store().release_admitted(event_id=tier.event_id, customer_ids=[buyer.customer.id])
    response = claim(api, tier, buyer)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "admission_expired"
    assert Claim.objects.count() == 0
    assert counter(tier) == 10


def test_admission_lapsing_inside_the_transaction_rolls_everything_back(api, tier, buyer):
    # Redis still lists the customer as admitted, but Postgres has moved on:
    # queue_entry_complete refuses inside the claim transaction.
    QueueEntry.objects.filter(pk=buyer.entry.pk).update(status="EXPIRED")
    response = claim(api, tier, buyer)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "admission_expired"
    assert Claim.objects.count() == 0
    assert Ticket.objects.filter(tier=tier, claim__isnull=False).count() == 0
    assert counter(tier) == 10  # the reservation was given back
    assert in_flight(tier) == []


def test_a_second_claim_is_409_already_claimed_and_names_the_first(api, tier, buyer):
    first = claim(api, tier, buyer)
    assert first.status_code == 201
    response = claim(api, tier, buyer)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "already_claimed"
    assert error["details"] == {"claim_id": first.json()["claim_id"], "claim_status": "CLAIMED"}
    assert Claim.objects.count() == 1
    assert counter(tier) == 9


def test_a_held_claim_lock_is_409_claim_in_progress(api, tier, buyer):
    get_redis().set(claim_lock_key(tier.event_id, buyer.customer.id), "someone", px=5000)
    response = claim(api, tier, buyer)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "claim_in_progress"
    assert response["Retry-After"] == "1"
    assert_nothing_claimed(tier, buyer, counter_value=10)


def test_sold_out_in_redis_and_postgres_is_410(api, tier, buyer):
    Ticket.objects.filter(tier=tier).delete()  # none left in Postgres either
    counter_key = f"fq:{{{tier.event_id}}}:tier:{tier.id}:available"
    queue_store().r.set(counter_key, 0)
    response = claim(api, tier, buyer)
    assert response.status_code == 410
    assert response.json()["error"]["code"] == "sold_out"
    assert "first on the waiting list" in response.json()["error"]["message"]
    assert_nothing_claimed(tier, buyer, counter_value=0, admission="EXPIRED")
    assert_first_on_the_waiting_list(tier, buyer)


def test_sold_out_in_redis_alone_is_not_final(api, tier, buyer):
    """Redis lost a give-back: Postgres still has the tickets."""
    counter_key = f"fq:{{{tier.event_id}}}:tier:{tier.id}:available"
    queue_store().r.set(counter_key, 0)
    response = claim(api, tier, buyer)
    assert response.status_code == 201, response.json()
    assert Ticket.objects.filter(tier=tier, claim__isnull=True).count() == 9
    assert counter(tier) == 9


@pytest.mark.parametrize("quantity", [0, -1, 2])
def test_quantity_outside_1_to_max_is_422(api, tier, buyer, quantity):
    response = claim(api, tier, buyer, quantity=quantity)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_quantity"
    assert_nothing_claimed(tier, buyer, counter_value=10)


@pytest.mark.parametrize(
    "body",
    [
        {"tier_id": "x", "quantity": 1},
        {"tier_id": "not-a-uuid", "quantity": 1, "admission_token": "t"},
        {"quantity": "many", "admission_token": "t", "tier_id": str(uuid.uuid4())},
        {"quantity": 1, "admission_token": "t", "tier_id": str(uuid.uuid4()), "extra": 1},
        ["not", "an", "object"],
    ],
)
def test_malformed_bodies_are_422(api, tier, buyer, body):
    response = api.post(
        f"/api/v1/events/{tier.event_id}/claims/", body, format="json", **bearer(buyer.customer)
    )
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "validation_error"
    assert_nothing_claimed(tier, buyer, counter_value=10)


def test_a_tier_of_another_event_is_422_tier_not_found(api, tier, buyer):
    other = TierFactory()
    response = claim(api, tier, buyer, tier_id=other.id)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "tier_not_found"
    assert_nothing_claimed(tier, buyer, counter_value=10)


def test_an_unknown_event_is_404(api, tier, buyer):
    response = claim(api, tier, buyer, event_id=uuid.uuid4())
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "event_not_found"


def test_an_ended_event_is_409_not_on_sale(api, tier, buyer):
    Event.objects.filter(pk=tier.event_id).update(status="ENDED")
    response = claim(api, tier, buyer)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "event_not_on_sale"
    assert_nothing_claimed(tier, buyer, counter_value=10)


def test_a_missing_counter_is_rebuilt_from_postgres(api, tier, buyer, redis_clean):
    other = admit_directly(tier.event, [CustomerFactory()])[0]
    assert claim(api, tier, other).status_code == 201
    redis_clean.delete(f"fq:{{{tier.event_id}}}:tier:{tier.id}:available")
    response = claim(api, tier, buyer)
    assert response.status_code == 201
    assert counter(tier) == 8  # 10 - 2, rebuilt from truth then decremented


def test_the_last_ticket_marks_the_event_sold_out(api):
    tier = on_sale(tickets=1)
    buyer = admit_directly(tier.event, [CustomerFactory()])[0]
    assert claim(api, tier, buyer).status_code == 201
    assert Event.objects.get(pk=tier.event_id).status == "SOLD_OUT"


def test_a_claim_short_of_free_rows_is_410_even_with_redis_inflated(api):
    tier = on_sale(tickets=1)
    first, second = admit_directly(tier.event, CustomerFactory.create_batch(2))
    assert claim(api, tier, first).status_code == 201
    queue_store().r.set(f"fq:{{{tier.event_id}}}:tier:{tier.id}:available", 10_000)
    Event.objects.filter(pk=tier.event_id).update(status="ACTIVE")
    response = claim(api, tier, second)
    assert response.status_code == 410
    assert response.json()["error"]["code"] == "sold_out"
    assert Claim.objects.filter(customer=second.customer).count() == 0
    assert counter(tier) == 10_000  # the failed reservation was given back
    assert_first_on_the_waiting_list(tier, second)


# --- GET / DELETE -------------------------------------------------------------


def test_owner_reads_the_claim_and_others_get_404(api, tier, buyer):
    claim_id = claim(api, tier, buyer).json()["claim_id"]
    mine = api.get(f"/api/v1/claims/{claim_id}/", **bearer(buyer.customer))
    assert mine.status_code == 200
    assert mine.json()["claim_id"] == claim_id
    assert mine.json()["event_id"] == str(tier.event_id)
    assert mine.json()["status"] == "CLAIMED"
    theirs = api.get(f"/api/v1/claims/{claim_id}/", **bearer(CustomerFactory()))
    assert theirs.status_code == 404
    assert theirs.json()["error"]["code"] == "claim_not_found"
    assert api.get(f"/api/v1/claims/{claim_id}/").status_code == 401


def test_delete_releases_the_claim_and_returns_the_tickets(
    api, tier, buyer, django_capture_on_commit_callbacks
):
    claim_id = claim(api, tier, buyer).json()["claim_id"]
    assert counter(tier) == 9
    with django_capture_on_commit_callbacks(execute=True):
        response = api.delete(f"/api/v1/claims/{claim_id}/", **bearer(buyer.customer))
    assert response.status_code == 204
    released = Claim.objects.get(pk=claim_id)
    assert released.status == ClaimStatus.RELEASED
    assert released.release_reason == "customer"
    assert Ticket.objects.filter(claim__isnull=False).count() == 0
    assert counter(tier) == 10


def test_delete_by_someone_else_is_404_and_changes_nothing(api, tier, buyer):
    claim_id = claim(api, tier, buyer).json()["claim_id"]
    response = api.delete(f"/api/v1/claims/{claim_id}/", **bearer(CustomerFactory()))
    assert response.status_code == 404
    assert Claim.objects.get(pk=claim_id).status == ClaimStatus.CLAIMED
    assert Ticket.objects.filter(claim_id=claim_id).count() == 1
    assert counter(tier) == 9


def test_delete_of_a_confirmed_claim_is_409_invalid_transition(api, tier, buyer):
    claim_id = claim(api, tier, buyer).json()["claim_id"]
    Claim.objects.filter(pk=claim_id).update(status=ClaimStatus.CONFIRMED)
    response = api.delete(f"/api/v1/claims/{claim_id}/", **bearer(buyer.customer))
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "invalid_transition"
    assert Claim.objects.get(pk=claim_id).status == ClaimStatus.CONFIRMED
    assert Ticket.objects.filter(claim_id=claim_id).count() == 1
    assert counter(tier) == 9


def test_the_201_body_has_the_serializer_shape(api, tier, buyer):
    from claims.serializers import ClaimSerializer

    body = claim(api, tier, buyer).json()
    assert body == ClaimSerializer(Claim.objects.get()).data
