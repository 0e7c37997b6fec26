"""Paystack's own published example bodies (tests/payments/paystack_examples.py,
each with the page it comes from) replayed through the real client, served
over HTTP by a scripted server, and through the real webhook view."""

from __future__ import annotations

import json
import logging
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from claims.domain import ClaimStatus
from payments.models import GatewayIncident, Payment, PaymentEvent, Refund, WebhookReceipt
from payments.paystack import GatewayPermanentError, GatewayTransientError, PaystackClient, sign
from payments.services import payment_refunds_sync, payment_verify_now
from payments.services.verify import payment_verify_and_apply
from tests.payments import paystack_examples as ex
from tests.support.factories import bearer
from tests.support.payments import (
    held_tickets,
    kinds,
    make_claim,
    payment_row,
    post_webhook,
    reload,
    transitions,
)
from tests.support.stub_gateway import StubGateway

pytestmark = pytest.mark.django_db


@pytest.fixture
def stub(settings):
    """A scripted gateway, and the app pointed at it."""
    server = StubGateway()
    settings.PAYSTACK_BASE_URL = server.url
    settings.PAYSTACK_MAX_ATTEMPTS = 3
    settings.PAYSTACK_RETRY_BASE_SECONDS = 0.01
    settings.PAYSTACK_TIMEOUT_SECONDS = 2.0
    yield server
    server.stop()


def deliver(client, settings, body: dict):
    raw = json.dumps(body).encode()
    return post_webhook(client, raw, sign(raw, settings.PAYSTACK_SECRET_KEY))


# --- initialize -----------------------------------------------------------------


def test_initialize_example_makes_the_payment_pending(api, stub):
    stub.then(200, ex.INITIALIZE_OK)
    claim = make_claim()

    response = api.post(
        f"/api/v1/claims/{claim.id}/payments/", format="json", **bearer(claim.customer)
    )

    assert response.status_code == 201
    payment = Payment.objects.get()
    assert payment.status == "PENDING"
    assert payment.authorization_url == "https://checkout.paystack.com/0peioxfhpn"
    assert payment.access_code == "0peioxfhpn"
    [sent] = stub.requests
    assert (sent["method"], sent["path"]) == ("POST", "/transaction/initialize")
    assert sent["body"]["reference"] == payment.reference
    assert sent["body"]["amount"] == claim.amount  # kobo


# --- verify, each status ------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "payment_status", "claim_status"),
    [
        ("success", "CONFIRMED", ClaimStatus.CONFIRMED),
        # Not paid: the claim stays held until its expiry (the buyer may try again).
        ("failed", "FAILED", ClaimStatus.CLAIMED),
        ("reversed", "FAILED", ClaimStatus.CLAIMED),  # the money went back: not paid
        ("abandoned", "PENDING", ClaimStatus.CLAIMED),  # the claim is still running
        ("ongoing", "PENDING", ClaimStatus.CLAIMED),
        ("pending", "PENDING", ClaimStatus.CLAIMED),
        ("processing", "PENDING", ClaimStatus.CLAIMED),
        ("queued", "PENDING", ClaimStatus.CLAIMED),
    ],
)
def test_verify_example_in_each_status(stub, status, payment_status, claim_status):
    # The example charged 40333 for 30050 requested: fees passed to the customer.
    payment = payment_row(reference="re4lyvq3s3", amount=30050)
    body = ex.variant(ex.VERIFY_SUCCESS, status=status, gateway_response=ex.VERIFY_STATUSES[status])
    stub.then(200, body)

    payment_verify_now(payment_id=payment.pk, actor="staff:test")

    payment = reload(payment)
    assert payment.status == payment_status
    assert payment.gateway_status == status
    assert reload(payment.claim).status == claim_status
    assert held_tickets(payment.claim) == (0 if claim_status == ClaimStatus.RELEASED else 1)
    assert stub.requests[0]["path"] == "/transaction/verify/re4lyvq3s3"
    result = payment.events.get(kind="verify_result")
    assert result.data["answer"] == body
    if status == "success":
        assert payment.gateway_transaction_id == "4099260516"
        assert (payment.paid_amount, payment.paid_currency) == (30050, "NGN")
        assert payment.flag_reason == ""


@pytest.mark.parametrize(
    ("ours", "charged", "requested", "flagged"),
    [
        (30050, 40333, 30050, False),  # fees passed to the customer
        (30050, 30050, None, False),  # no requested_amount: the amount itself
        (40333, 40333, 30050, True),  # the charge was for less than we asked
        (30050, 20000, 30050, True),  # charged less than requested
        (30050, 40333, "30050", True),  # not a number: compare the amount
    ],
)
def test_verify_compares_what_we_asked_for(stub, ours, charged, requested, flagged):
    payment = payment_row(reference="re4lyvq3s3", amount=ours)
    stub.then(200, ex.variant(ex.VERIFY_SUCCESS, amount=charged, requested_amount=requested))

    payment_verify_now(payment_id=payment.pk, actor="staff:test")

    payment = reload(payment)
    assert payment.status == ("REFUND_REQUIRED" if flagged else "CONFIRMED")
    assert bool(payment.flag_reason) is flagged


@pytest.mark.parametrize("not_found", [ex.ERROR_400_REFERENCE_NOT_FOUND, ex.ERROR_404_NOT_FOUND])
def test_verify_not_found_in_both_published_shapes(stub, not_found):
    payment = payment_row(reference="never-sent", amount=5000, status="INITIALIZING")
    stub.then(400 if not_found["message"].startswith("Transaction") else 404, not_found)

    result = payment_verify_and_apply(payment_id=payment.pk, actor="reconcile", release_claim=True)

    assert result == "not_found"
    assert reload(payment).status == "FAILED"  # the gateway never saw it: nobody paid
    assert reload(payment.claim).status == ClaimStatus.RELEASED
    assert payment.events.get(kind="verify_error").data["answer"] == not_found


# --- errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body"), [(400, ex.ERROR_400_INVALID_EMAIL), (401, ex.ERROR_401_INVALID_KEY)]
)
def test_merchant_side_error_example_leaves_the_claim_claimed(api, stub, status, body, caplog):
    stub.then(status, body)
    claim = make_claim(quantity=2)

    with caplog.at_level(logging.ERROR, logger="payments.services.incidents"):
        response = api.post(
            f"/api/v1/claims/{claim.id}/payments/", format="json", **bearer(claim.customer)
        )

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "payments_unavailable"
    assert int(response["Retry-After"]) >= 1
    assert reload(claim).status == ClaimStatus.CLAIMED
    assert held_tickets(claim) == 2
    payment = Payment.objects.get()
    assert payment.status == "INITIALIZING"
    assert payment.blocked_since is not None
    assert kinds(payment) == ["initialize_requested", "initialize_error", "merchant_error"]
    incident = GatewayIncident.objects.get()
    assert (incident.operation, incident.failures, incident.last_http_status) == (
        "initialize",
        1,
        status,
    )
    assert incident.last_message == body["message"]
    assert len(stub.requests) == 1  # a 4xx is never retried
    assert any(r.levelno == logging.ERROR for r in caplog.records)


def test_duplicate_reference_example_is_recognised(stub):
    stub.then(400, ex.ERROR_400_DUPLICATE_REFERENCE)
    with pytest.raises(GatewayPermanentError) as refused:
        PaystackClient().initialize(
            email="a@example.test",
            amount=100,
            currency="NGN",
            reference="r-1",
            callback_url="https://x.test/",
            metadata={},
        )
    assert refused.value.duplicate_reference
    assert not refused.value.credentials_refused


def test_429_example_waits_out_a_short_retry_after(stub):
    stub.then(429, ex.ERROR_429, headers={"Retry-After": "1"}).then(200, ex.INITIALIZE_OK)
    started = time.monotonic()
    answer = PaystackClient(deadline=5).initialize(
        email="a@example.test",
        amount=100,
        currency="NGN",
        reference="r-1",
        callback_url="https://x.test/",
        metadata={},
    )
    assert answer.access_code == "0peioxfhpn"
    assert len(stub.requests) == 2
    assert time.monotonic() - started >= 1.0  # it waited as asked, not its own jitter


def test_429_example_with_a_long_retry_after_is_handed_to_the_customer(api, stub):
    stub.then(429, ex.ERROR_429, headers={"Retry-After": "40"})
    claim = make_claim()

    response = api.post(
        f"/api/v1/claims/{claim.id}/payments/", format="json", **bearer(claim.customer)
    )

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "gateway_unavailable"
    assert response["Retry-After"] == "40"
    assert len(stub.requests) == 1  # 40 s does not fit in the call's deadline: not retried
    payment = Payment.objects.get()
    assert payment.status == "INITIALIZING"
    assert payment.next_check_at >= timezone.now() + timedelta(seconds=35)
    assert reload(claim).status == ClaimStatus.CLAIMED


def test_429_is_transient_with_its_retry_after(stub):
    stub.then(429, ex.ERROR_429, headers={"Retry-After": "120"})
    with pytest.raises(GatewayTransientError) as busy:
        PaystackClient(max_attempts=1).verify(reference="r-1")
    assert (busy.value.status_code, busy.value.retry_after) == (429, 120)


# --- webhooks -------------------------------------------------------------------


def test_charge_success_example_confirms(client, settings):
    payment = payment_row(reference="qTPrJoy9Bx", amount=10000)

    response = deliver(client, settings, ex.CHARGE_SUCCESS)

    assert response.json() == {"status": "processed"}
    payment = reload(payment)
    assert payment.status == "CONFIRMED"
    assert payment.gateway_transaction_id == "302961"
    assert reload(payment.claim).status == ClaimStatus.CONFIRMED
    assert transitions(payment) == [("PENDING", "CONFIRMED")]


def test_charge_success_with_fees_passed_to_the_customer_confirms(client, settings):
    payment = payment_row(reference="qTPrJoy9Bx", amount=10000)
    body = ex.variant(ex.CHARGE_SUCCESS, amount=10150, requested_amount=10000)

    response = deliver(client, settings, body)

    assert response.json() == {"status": "processed"}
    payment = reload(payment)
    assert (payment.status, payment.paid_amount, payment.flag_reason) == ("CONFIRMED", 10000, "")


@pytest.mark.parametrize(
    ("status", "refund_status", "payment_status"),
    [
        ("pending", "PENDING", "REFUND_PENDING"),
        ("processing", "PENDING", "REFUND_PENDING"),
        ("processed", "PROCESSED", "REFUNDED"),
        ("failed", "FAILED", "REFUND_FAILED"),
    ],
)
def test_refund_event_examples_move_our_refund_once_the_gateway_names_it(
    client,
    settings,
    stub,
    django_capture_on_commit_callbacks,
    status,
    refund_status,
    payment_status,
):
    """Paystack's refund events carry no refund id: the event decides
    nothing by guess. Our refund is due for its look-up at once, and the
    transaction's refunds are listed at the gateway, where ours is the one
    whose merchant note names it."""
    payment = payment_row(reference="T685312322670591", amount=10000, status="REFUND_REQUIRED")
    refund = Refund.objects.create(
        payment=payment,
        amount=10000,
        currency="NGN",
        requested_by="auto",
        status="PENDING",
        gateway_refund_id="",
        next_check_at=timezone.now() + timedelta(minutes=5),
    )
    Payment.objects.filter(pk=payment.pk).update(status="REFUND_PENDING")

    with django_capture_on_commit_callbacks() as callbacks:
        response = deliver(client, settings, ex.refund_event(status))

    assert response.json() == {"status": "processed"}
    assert reload(refund).status == "PENDING"  # not moved by the event alone
    assert reload(refund).next_check_at <= timezone.now()
    assert len(callbacks) == 1  # the look-up, after commit
    listed = {
        **ex.REFUND_CREATE_OK["data"],
        "status": status,
        "merchant_note": f"FairQueue refund {refund.pk} for T685312322670591: auto",
    }
    stub.then(200, {"status": True, "message": "Refunds retrieved", "data": [listed]})

    assert payment_refunds_sync(payment_id=payment.pk) == "synced:1"

    refund = reload(refund)
    assert (refund.status, refund.gateway_refund_id) == (refund_status, "3018284")
    payment = reload(payment)
    assert payment.status == payment_status
    assert payment.refunded_amount == (10000 if status == "processed" else 0)
    assert payment.events.filter(kind="webhook_received").count() == 1


def test_refund_processed_example_for_a_paid_payment_is_a_dashboard_refund(
    client, settings, stub, django_capture_on_commit_callbacks
):
    """Nobody here asked for it: a refund made in the gateway's dashboard,
    found in the transaction's refunds (its note names none of ours). It is
    recorded as a refund of its own, and the purchase is cancelled."""
    payment = payment_row(reference="T685312322670591", amount=10000, status="CONFIRMED")
    with django_capture_on_commit_callbacks():
        deliver(client, settings, ex.REFUND_PROCESSED)
    assert reload(payment).status == "CONFIRMED"  # nothing decided by guess
    listed = {**ex.REFUND_CREATE_OK["data"], "status": "processed"}
    stub.then(200, {"status": True, "message": "Refunds retrieved", "data": [listed]})

    payment_refunds_sync(payment_id=payment.pk)

    payment = reload(payment)
    assert payment.status == "REFUNDED"
    assert transitions(payment) == [("CONFIRMED", "REFUND_PENDING"), ("REFUND_PENDING", "REFUNDED")]
    refund = Refund.objects.get(payment=payment)
    assert (refund.status, refund.amount, refund.requested_by) == ("PROCESSED", 10000, "gateway")
    claim = reload(payment.claim)
    assert (claim.status, claim.release_reason) == (ClaimStatus.RELEASED, "refunded")
    assert held_tickets(claim) == 0


@pytest.mark.parametrize(
    ("body", "dispute", "claim_flagged"),
    [
        (ex.DISPUTE_CREATE, "open", True),
        (ex.dispute_event("remind"), "open", True),
        (ex.dispute_event("resolve", "merchant-accepted"), "lost", True),
        (ex.dispute_event("resolve", "declined"), "won", False),
    ],
)
def test_dispute_event_examples_flag_payment_and_claim(
    client, settings, body, dispute, claim_flagged
):
    payment = payment_row(reference="asqsmlrk0l9t6gw", amount=10000, status="CONFIRMED")

    response = deliver(client, settings, body)

    assert response.json() == {"status": "processed"}
    payment = reload(payment)
    assert payment.dispute == dispute
    assert payment.status == "CONFIRMED"  # the ticket stays valid until staff decide
    claim = reload(payment.claim)
    assert claim.status == ClaimStatus.CONFIRMED
    assert (claim.disputed_at is not None) is claim_flagged
    logged = payment.events.get(kind="dispute")
    assert (logged.data["to"], logged.data["dispute_id"]) == (dispute, 2867)


def test_unknown_event_example_is_acknowledged_and_changes_nothing(client, settings):
    payment = payment_row(reference="1jhbs3ozmen0k7y5efmw", amount=30000)
    events_before = PaymentEvent.objects.count()

    response = deliver(client, settings, ex.TRANSFER_SUCCESS)

    assert response.status_code == 200
    assert response.json() == {"status": "ignored"}
    assert PaymentEvent.objects.count() == events_before
    assert WebhookReceipt.objects.count() == 0
    assert reload(payment).status == "PENDING"


# --- refunds through the client ---------------------------------------------------


def test_refund_create_example_is_read(stub):
    stub.then(200, ex.REFUND_CREATE_OK)
    answer = PaystackClient().refund(
        reference="T685312322670591",
        amount=None,
        currency="NGN",
        merchant_note="why",
        customer_note="for you",
    )
    assert (answer.refund_id, answer.status, answer.amount, answer.transaction_reference) == (
        "3018284",
        "pending",
        10000,
        "T685312322670591",
    )
    [sent] = stub.requests
    assert (sent["method"], sent["path"]) == ("POST", "/refund")
    assert sent["body"] == {
        "transaction": "T685312322670591",
        "currency": "NGN",
        "merchant_note": "why",
        "customer_note": "for you",
    }
