"""POST /claims/{id}/payments/ and GET /payments/{id}/, against the sandbox
gateway over HTTP."""

import re
import uuid

import pytest

from claims.domain import ClaimStatus
from payments.models import Payment, PaymentEvent
from payments.serializers import PaymentOut, payment_out
from tests.support.factories import CustomerFactory, bearer
from tests.support.payments import held_tickets, kinds, make_claim, reload, transitions

pytestmark = pytest.mark.django_db


def start(api, claim, customer=None, **headers):
    return api.post(
        f"/api/v1/claims/{claim.id}/payments/",
        format="json",
        **bearer(customer or claim.customer),
        **headers,
    )


def test_initialize_happy_path(api, sandbox, settings):
    settings.PUBLIC_BASE_URL = "https://tickets.example.test"
    claim = make_claim(quantity=2)
    response = start(api, claim)

    assert response.status_code == 201, response.json()
    body = response.json()
    payment = Payment.objects.get()
    assert body["payment_id"] == str(payment.id)
    assert body["status"] == "PENDING"
    assert body["reference"] == payment.reference
    # Only the characters Paystack documents for a reference.
    assert re.fullmatch(r"fq-[0-9a-f]{24}", payment.reference)
    assert body["authorization_url"].startswith(f"{sandbox.url}/checkout/")
    assert (payment.amount, payment.currency) == (claim.amount, "NGN")
    # What the gateway got: our amount in kobo, reference, callback and metadata.
    tx = sandbox.transaction(payment.reference)
    assert tx["amount"] == claim.amount == 1_000_000
    assert tx["currency"] == "NGN"
    assert tx["email"] == claim.customer.email
    assert tx["callback_url"] == "https://tickets.example.test/payments/return/"
    assert tx["metadata"] == {
        "claim_id": str(claim.id),
        "event_id": str(claim.event_id),
        "payment_id": str(payment.id),
    }
    assert sandbox.stats()["initialize_calls"] == 1
    assert kinds(payment) == ["initialize_requested", "initialize_answer", "state_change"]
    assert transitions(payment) == [("INITIALIZING", "PENDING")]
    assert reload(claim).status == ClaimStatus.CLAIMED


def test_second_call_returns_the_live_payment(api, sandbox):
    claim = make_claim()
    first = start(api, claim)
    second = start(api, claim)
    assert (first.status_code, second.status_code) == (201, 200)
    assert second.json() == first.json()
    assert Payment.objects.count() == 1
    assert sandbox.stats()["initialize_calls"] == 1


def test_get_payment_is_for_its_owner_only(api, sandbox):
    claim = make_claim()
    payment_id = start(api, claim).json()["payment_id"]
    mine = api.get(f"/api/v1/payments/{payment_id}/", **bearer(claim.customer))
    assert mine.status_code == 200
    assert mine.json()["status"] == "PENDING"
    theirs = api.get(f"/api/v1/payments/{payment_id}/", **bearer(CustomerFactory()))
    assert theirs.status_code == 404
    assert theirs.json()["error"]["code"] == "payment_not_found"
    anonymous = api.get(f"/api/v1/payments/{payment_id}/")
    assert anonymous.status_code == 401
    missing = api.get(f"/api/v1/payments/{uuid.uuid4()}/", **bearer(claim.customer))
    assert missing.status_code == 404


def test_someone_elses_claim_is_not_found(api, sandbox):
    claim = make_claim()
    response = start(api, claim, customer=CustomerFactory())
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "claim_not_found"
    assert Payment.objects.count() == 0
    assert sandbox.stats()["initialize_calls"] == 0


def test_unauthenticated_is_refused(api, sandbox):
    claim = make_claim()
    response = api.post(f"/api/v1/claims/{claim.id}/payments/", format="json")
    assert response.status_code == 401
    assert Payment.objects.count() == 0


def test_unknown_fields_are_refused(api, sandbox):
    claim = make_claim()
    response = api.post(
        f"/api/v1/claims/{claim.id}/payments/",
        {"amount": 1},
        format="json",
        **bearer(claim.customer),
    )
    assert response.status_code == 422
    assert Payment.objects.count() == 0


@pytest.mark.parametrize(
    ("claim_changes", "status", "code"),
    [
        ({"status": ClaimStatus.CONFIRMED}, 409, "already_paid"),
        ({"status": ClaimStatus.RELEASED}, 409, "claim_not_payable"),
    ],
)
def test_claim_not_payable(api, sandbox, claim_changes, status, code):
    claim = make_claim()
    type(claim).objects.filter(pk=claim.pk).update(**claim_changes)
    response = start(api, claim)
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert Payment.objects.count() == 0
    assert sandbox.stats()["initialize_calls"] == 0


def test_released_claim_does_not_offer_its_live_payment(api, sandbox):
    claim = make_claim()
    assert start(api, claim).status_code == 201
    type(claim).objects.filter(pk=claim.pk).update(status=ClaimStatus.RELEASED)
    response = start(api, claim)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "claim_not_payable"


def test_expired_claim_still_shows_the_payment_in_flight(api, sandbox):
    claim = make_claim()
    first = start(api, claim)
    type(claim).objects.filter(pk=claim.pk).update(expires_at=claim.created_at)
    again = start(api, claim)
    assert again.status_code == 200
    assert again.json()["payment_id"] == first.json()["payment_id"]
    assert sandbox.stats()["initialize_calls"] == 1


def test_expired_claim_cannot_be_paid(api, sandbox):
    claim = make_claim(expires_in=-1)
    response = start(api, claim)
    assert response.status_code == 410
    assert response.json()["error"]["code"] == "claim_expired"
    assert Payment.objects.count() == 0


def test_transient_5xx_is_retried_then_succeeds(api, sandbox):
    sandbox.config(fail_next_n_with_5xx=2)
    claim = make_claim()
    response = start(api, claim)
    assert response.status_code == 201
    assert response.json()["status"] == "PENDING"
    stats = sandbox.stats()
    assert (stats["initialize_calls"], stats["initialize_created"], stats["verify_calls"]) == (
        3,
        1,
        0,
    )
    payment = Payment.objects.get()
    assert kinds(payment) == ["initialize_requested", "initialize_answer", "state_change"]


def test_gateway_down_keeps_initializing_and_answers_503(api, sandbox, settings):
    sandbox.config(fail_next_n_with_5xx=3)  # every attempt of the first call
    claim = make_claim()
    response = start(api, claim)

    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json()["error"]["code"] == "gateway_unavailable"
    payment = Payment.objects.get()
    assert payment.status == "INITIALIZING"
    assert reload(claim).status == ClaimStatus.CLAIMED
    assert held_tickets(claim) == 1
    assert kinds(payment) == ["initialize_requested", "initialize_error"]
    assert sandbox.stats()["initialize_created"] == 0

    # The customer retries: the same payment is resumed, same reference.
    retry = start(api, claim)
    assert retry.status_code == 200
    assert retry.json()["payment_id"] == str(payment.id)
    assert retry.json()["status"] == "PENDING"
    assert retry.json()["authorization_url"]
    assert Payment.objects.count() == 1
    assert sandbox.transaction(payment.reference)["amount"] == claim.amount


def test_idempotency_key_replays_and_refuses_another_body(api, sandbox):
    claim = make_claim()
    first = start(api, claim, HTTP_IDEMPOTENCY_KEY="k-1")
    replay = start(api, claim, HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == replay.status_code == 201
    assert replay.json() == first.json()
    assert replay["Idempotent-Replayed"] == "true"
    other = api.post(
        f"/api/v1/claims/{claim.id}/payments/",
        {"note": "x"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k-1",
        **bearer(claim.customer),
    )
    assert other.status_code == 422
    assert other.json()["error"]["code"] == "idempotency_mismatch"
    assert Payment.objects.count() == 1
    assert sandbox.stats()["initialize_calls"] == 1


def test_log_keeps_the_request_without_the_secret(api, sandbox, settings):
    claim = make_claim()
    start(api, claim)
    requested = PaymentEvent.objects.get(kind="initialize_requested")
    assert requested.data["reference"] == Payment.objects.get().reference
    assert requested.data["amount"] == claim.amount
    assert requested.actor == "customer"
    everything = str(list(PaymentEvent.objects.values_list("data", "raw_body")))
    assert settings.PAYSTACK_SECRET_KEY not in everything


def test_return_page_shows_the_payment(api, client, sandbox):
    claim = make_claim()
    reference = start(api, claim).json()["reference"]
    page = client.get("/payments/return/", {"trxref": reference, "reference": reference})
    assert page.status_code == 200
    assert b"<h1>Waiting for your payment</h1>" in page.content  # plain words
    assert b"PENDING" not in page.content
    assert client.get("/payments/return/", {"reference": "nope"}).status_code == 404
    assert client.get("/payments/return/").status_code == 404


def test_answer_lost_on_the_way_back_then_a_fresh_payment(api, sandbox):
    # The gateway records the transaction but its answer never arrives; the
    # client's retry hears "Duplicate Transaction Reference".
    sandbox.config(fail_next_n_with_5xx=1, fail_after_recording=True)
    claim = make_claim()
    response = start(api, claim)

    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    lost = Payment.objects.get()
    assert lost.status == "FAILED"  # verified: abandoned and unreachable
    assert kinds(lost) == [
        "initialize_requested",
        "initialize_error",
        "verify_requested",
        "verify_result",
        "state_change",
    ]
    assert reload(claim).status == ClaimStatus.CLAIMED  # the claim is kept
    assert held_tickets(claim) == 1

    retry = start(api, claim)
    assert retry.status_code == 201
    assert retry.json()["reference"] != lost.reference
    assert retry.json()["status"] == "PENDING"
    assert sandbox.stats()["initialize_created"] == 2


def test_the_answers_have_the_documented_shape(api, sandbox):
    """The payment start's answer (built by hand on its hot path) is
    ``PaymentOut``'s, both while INITIALIZING and once PENDING."""
    claim = make_claim()
    started = start(api, claim).json()
    payment = Payment.objects.get()
    assert started == PaymentOut(payment).data
    assert api.get(f"/api/v1/payments/{payment.id}/", **bearer(claim.customer)).json() == started
    Payment.objects.filter(pk=payment.pk).update(status="INITIALIZING", authorization_url="")
    payment = reload(payment)
    assert payment_out(payment) == PaymentOut(payment).data
    assert payment_out(payment)["authorization_url"] is None
