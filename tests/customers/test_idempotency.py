"""Idempotency-Key: same key and body -> the same answer; same key, other
body -> 422; concurrent requests with one key -> one effect."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection
from rest_framework.response import Response
from rest_framework.test import APIClient

from claims.models import Claim
from claims.services.claiming import claim_lock_key
from customers import idempotency
from customers.models import IdempotencyKey
from events.models import Event
from fairqueue.errors import Gone
from fairqueue.redis import get_redis
from inventory.models import Ticket
from tests.support.factories import CustomerFactory, bearer
from tests.support.races import race
from tests.support.sales import admit_directly, counter, make_customers, on_sale


def post_claim(client, tier, admitted, *, key=None, quantity=1):
    headers = bearer(admitted.customer)
    if key is not None:
        headers["HTTP_IDEMPOTENCY_KEY"] = key
    return client.post(
        f"/api/v1/events/{tier.event_id}/claims/",
        {"admission_token": admitted.token, "tier_id": str(tier.id), "quantity": quantity},
        format="json",
        **headers,
    )


@pytest.fixture
def tier_event_max_two():
    tier = on_sale(tickets=5)
    Event.objects.filter(pk=tier.event_id).update(max_tickets_per_customer=2)
    return tier


@pytest.mark.django_db
def test_same_key_and_body_gets_the_same_answer_and_one_claim(api):
    tier = on_sale(tickets=5)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    first = post_claim(api, tier, buyer, key="k-1")
    second = post_claim(api, tier, buyer, key="k-1")
    assert first.status_code == second.status_code == 201
    assert first.json() == second.json()
    assert second["Idempotent-Replayed"] == "true"
    assert not first.has_header("Idempotent-Replayed")
    assert Claim.objects.count() == 1
    assert counter(tier) == 4
    row = IdempotencyKey.objects.get()
    assert (row.scope, row.key, row.response_status) == ("claims.create", "k-1", 201)


@pytest.mark.django_db
def test_without_a_key_a_retry_is_a_new_request(api):
    tier = on_sale(tickets=5)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    assert post_claim(api, tier, buyer).status_code == 201
    retry = post_claim(api, tier, buyer)
    assert retry.status_code == 409
    assert retry.json()["error"]["code"] == "already_claimed"
    assert IdempotencyKey.objects.count() == 0


@pytest.mark.django_db
def test_same_key_with_another_body_is_422_and_changes_nothing(api, tier_event_max_two):
    tier = tier_event_max_two
    (buyer,) = admit_directly(tier.event, make_customers(1))
    assert post_claim(api, tier, buyer, key="k-2").status_code == 201
    other = post_claim(api, tier, buyer, key="k-2", quantity=2)
    assert other.status_code == 422
    assert other.json()["error"]["code"] == "idempotency_mismatch"
    assert Claim.objects.get().quantity == 1
    assert counter(tier) == 4


@pytest.mark.django_db
def test_a_final_error_is_stored_and_replayed(api):
    tier = on_sale(tickets=5)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    Ticket.objects.filter(tier=tier).delete()  # sold out in Postgres too: a final 410
    get_redis().set(f"fq:{{{tier.event_id}}}:tier:{tier.id}:available", 0)
    first = post_claim(api, tier, buyer, key="k-3")
    assert first.status_code == 410
    get_redis().set(f"fq:{{{tier.event_id}}}:tier:{tier.id}:available", 5)
    replay = post_claim(api, tier, buyer, key="k-3")
    assert replay.status_code == 410
    assert replay.json() == first.json()
    assert Claim.objects.count() == 0


@pytest.mark.django_db
def test_a_transient_answer_is_not_stored(api):
    tier = on_sale(tickets=5)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    lock_key = claim_lock_key(tier.event_id, buyer.customer.id)
    get_redis().set(lock_key, "someone", px=10_000)
    busy = post_claim(api, tier, buyer, key="k-4")
    assert busy.status_code == 409
    assert busy.json()["error"]["code"] == "claim_in_progress"
    assert IdempotencyKey.objects.count() == 0  # freed for the retry
    get_redis().delete(lock_key)
    retry = post_claim(api, tier, buyer, key="k-4")
    assert retry.status_code == 201
    assert Claim.objects.count() == 1


@pytest.mark.django_db
def test_keys_belong_to_one_customer(api):
    tier = on_sale(tickets=5)
    first, second = admit_directly(tier.event, make_customers(2))
    a = post_claim(api, tier, first, key="same")
    b = post_claim(api, tier, second, key="same")
    assert a.status_code == b.status_code == 201
    assert a.json()["claim_id"] != b.json()["claim_id"]
    assert Claim.objects.count() == 2


@pytest.mark.django_db
@pytest.mark.parametrize("key", ["", "x" * 256, "bad\tkey", "clé"])
def test_a_malformed_key_is_422(api, key):
    tier = on_sale(tickets=5)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    response = post_claim(api, tier, buyer, key=key)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_idempotency_key"
    assert Claim.objects.count() == 0
    assert counter(tier) == 5


# --- concurrency -----------------------------------------------------------------


def _run_concurrently(n, fn):
    return race(lambda _: fn(), list(range(n)), threads=n)


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_key_have_exactly_one_effect():
    customer = CustomerFactory()
    effects = []
    lock = threading.Lock()

    def handler() -> Response:
        with lock:
            effects.append(1)
        time.sleep(0.3)  # the owner is slow: the others must wait, not run
        return Response({"made": len(effects)}, status=201)

    def call():
        return idempotency.idempotent_response(
            scope="test.effect",
            key="one-key",
            customer_id=customer.id,
            fingerprint="same-body",
            run=handler,
            context={},
        )

    responses = _run_concurrently(10, call)
    assert len(effects) == 1
    assert [r.status_code for r in responses] == [201] * 10
    assert {r.data["made"] for r in responses} == {1}
    assert IdempotencyKey.objects.get().response_status == 201


@pytest.mark.django_db(transaction=True)
def test_a_request_still_running_past_the_wait_is_409_in_progress(monkeypatch):
    monkeypatch.setattr(idempotency, "WAIT_SECONDS", 0.2)
    customer = CustomerFactory()
    release = threading.Event()

    def slow() -> Response:
        release.wait(5)
        return Response({"ok": True}, status=201)

    def call():
        try:
            return idempotency.idempotent_response(
                scope="test.slow",
                key="k",
                customer_id=customer.id,
                fingerprint="f",
                run=slow,
                context={},
            )
        finally:
            connection.close()

    owner = threading.Thread(target=call)
    owner.start()
    time.sleep(0.1)
    with pytest.raises(Exception) as exc:
        call()
    assert exc.value.code == "idempotency_in_progress"
    assert exc.value.retry_after == 1
    release.set()
    owner.join()
    assert IdempotencyKey.objects.get().response_status == 201


@pytest.mark.django_db(transaction=True)
def test_concurrent_claim_retries_all_get_the_one_claim():
    tier = on_sale(tickets=5)
    (buyer,) = admit_directly(tier.event, make_customers(1))

    def one():
        return post_claim(APIClient(), tier, buyer, key="retry-storm")

    responses = _run_concurrently(8, one)
    assert Claim.objects.count() == 1
    assert {r.status_code for r in responses} == {201}
    assert {r.json()["claim_id"] for r in responses} == {str(Claim.objects.get().pk)}
    assert counter(tier) == 4


@pytest.mark.django_db(transaction=True)
def test_without_the_key_concurrent_retries_get_different_answers():
    """The same storm without Idempotency-Key: one claim still (Postgres), but
    the client's retries are answered 409, not with its claim."""
    tier = on_sale(tickets=5)
    (buyer,) = admit_directly(tier.event, make_customers(1))

    def one():
        return post_claim(APIClient(), tier, buyer)

    responses = _run_concurrently(8, one)
    assert Claim.objects.count() == 1
    codes = sorted(r.status_code for r in responses)
    assert codes[0] == 201 and set(codes[1:]) == {409}


def test_the_owner_crashing_frees_the_key_for_a_retry(db):
    customer = CustomerFactory()

    def explode() -> Response:
        raise RuntimeError("bug")

    with pytest.raises(RuntimeError):
        idempotency.idempotent_response(
            scope="t", key="k", customer_id=customer.id, fingerprint="f", run=explode, context={}
        )
    assert IdempotencyKey.objects.count() == 0

    def gone() -> Response:
        raise Gone("Sold out.", code="sold_out")

    response = idempotency.idempotent_response(
        scope="t", key="k", customer_id=customer.id, fingerprint="f", run=gone, context={}
    )
    assert response.status_code == 410
    assert IdempotencyKey.objects.get().response_body["error"]["code"] == "sold_out"
