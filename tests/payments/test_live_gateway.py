"""The whole payment over real HTTP both ways: the app (pytest-django's live
server) calls the sandbox, the customer's browser uses the sandbox checkout,
and the sandbox sends its signed webhooks back to the app."""

import re
import time

import pytest
import requests

from claims.domain import ClaimStatus, ReleaseReason
from claims.services import claim_release
from payments.models import Payment, WebhookReceipt
from payments.services import payment_verify_now, payments_reconcile
from tests.support.factories import TierFactory, bearer
from tests.support.payments import WEBHOOK_PATH, held_tickets, make_claim, reload, transitions

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def gateway(sandbox, live_server, settings):
    settings.PUBLIC_BASE_URL = live_server.url
    sandbox.app.webhook_url = live_server.url + WEBHOOK_PATH
    return sandbox


def wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


def start_payment(live_server, claim) -> dict:
    headers = {"Authorization": bearer(claim.customer)["HTTP_AUTHORIZATION"]}
    response = requests.post(
        f"{live_server.url}/api/v1/claims/{claim.id}/payments/",
        json={},
        headers=headers,
        timeout=10,
    )
    assert response.status_code == 201, response.text
    return response.json()


def test_customer_pays_on_the_checkout_page(live_server, gateway):
    claim = make_claim()
    started = start_payment(live_server, claim)

    page = requests.get(started["authorization_url"], timeout=10)
    assert page.status_code == 200
    assert "Pay" in page.text and "Decline" in page.text
    pay_action = re.search(r'action="([^"]+/pay)"', page.text).group(1)
    paid = requests.post(gateway.url + pay_action, allow_redirects=False, timeout=10)

    assert paid.status_code == 303
    callback = paid.headers["Location"]
    assert callback.startswith(f"{live_server.url}/payments/return/?")
    assert f"reference={started['reference']}" in callback
    payment = Payment.objects.get(pk=started["payment_id"])
    wait_for(lambda: reload(payment).status == "CONFIRMED")
    assert reload(claim).status == ClaimStatus.CONFIRMED
    assert transitions(payment) == [("INITIALIZING", "PENDING"), ("PENDING", "CONFIRMED")]
    # The answer reaches the gateway once the webhook's after-commit work is done.
    wait_for(lambda: gateway.transaction(payment.reference)["webhooks"])
    assert gateway.transaction(payment.reference)["webhooks"][0]["result"] == 200
    # The browser lands on the return page, which shows the outcome in plain words.
    landing = requests.get(callback, timeout=10)
    assert landing.status_code == 200
    assert "<h1>Paid</h1>" in landing.text


def test_customer_declines_and_the_return_page_finds_it_at_once(live_server, gateway):
    claim = make_claim()
    started = start_payment(live_server, claim)
    page = requests.get(started["authorization_url"], timeout=10)
    decline = re.search(r'action="([^"]+/decline)"', page.text).group(1)
    declined = requests.post(gateway.url + decline, allow_redirects=False, timeout=10)
    assert declined.status_code == 303
    payment = Payment.objects.get(pk=started["payment_id"])
    assert gateway.transaction(payment.reference)["webhooks"] == []  # Paystack sends none
    assert reload(payment).status == "PENDING"

    # The browser follows the redirect back to us: the page asks the gateway.
    landing = requests.get(declined.headers["Location"], timeout=10)

    assert landing.status_code == 200
    assert "did not go through" in landing.text
    assert reload(payment).status == "FAILED"
    claim = reload(claim)
    assert claim.status == ClaimStatus.CLAIMED  # held until its expiry: "Try again"
    assert held_tickets(claim) == 1
    assert payment.events.filter(kind="verify_result", actor="return").count() == 1


def test_duplicate_deliveries_over_http_confirm_once(live_server, gateway):
    gateway.config(duplicate_webhooks=10)
    claim = make_claim()
    started = start_payment(live_server, claim)

    result = gateway.pay(started["reference"])  # waits for the ten deliveries

    assert [w["result"] for w in result["webhooks"]] == [200] * 10
    payment = Payment.objects.get(pk=started["payment_id"])
    assert payment.status == "CONFIRMED"
    assert payment.events.filter(kind="state_change", to_status="CONFIRMED").count() == 1
    assert payment.events.filter(kind="webhook_received").count() == 1
    assert WebhookReceipt.objects.count() == 1


def test_late_webhook_after_verify_is_a_no_op(live_server, gateway):
    gateway.config(webhook_delay_seconds=0.5)
    claim = make_claim()
    started = start_payment(live_server, claim)
    gateway.pay(started["reference"], wait=False)
    payment = Payment.objects.get(pk=started["payment_id"])
    payment_verify_now(payment_id=payment.pk, actor="staff:test")  # before the webhook lands
    assert reload(payment).status == "CONFIRMED"

    wait_for(lambda: gateway.transaction(payment.reference)["webhooks"])
    assert gateway.transaction(payment.reference)["webhooks"][0]["result"] == 200
    assert payment.events.filter(kind="webhook_received").count() == 1
    assert payment.events.filter(kind="state_change", to_status="CONFIRMED").count() == 1


def test_refund_required_is_refunded_over_http_without_staff(live_server, gateway):
    """Paid after its tickets went to someone else: REFUND_REQUIRED, then
    reconciliation (as beat runs it) asks POST /refund, and the sandbox's
    refund.pending and refund.processed webhooks make it REFUNDED."""
    tier = TierFactory(inventory=1)
    claim = make_claim(tier=tier)
    started = start_payment(live_server, claim)
    claim_release(claim_id=claim.id, reason=ReleaseReason.EXPIRED)
    make_claim(tier=tier)  # the last ticket goes to someone else
    gateway.pay(started["reference"])  # its charge.success reaches the app
    payment = Payment.objects.get(pk=started["payment_id"])
    assert reload(payment).status == "REFUND_REQUIRED"

    assert payments_reconcile() == {"auto_refund:pending": 1}

    wait_for(lambda: reload(payment).status == "REFUNDED")
    payment = reload(payment)
    assert payment.refunded_amount == payment.amount
    assert transitions(payment)[-3:] == [
        ("PENDING", "REFUND_REQUIRED"),
        ("REFUND_REQUIRED", "REFUND_PENDING"),
        ("REFUND_PENDING", "REFUNDED"),
    ]
    received = [
        e.data["event"] for e in payment.events.filter(kind="webhook_received").order_by("id")
    ]
    # Webhooks may arrive in any order; each counted once.
    assert sorted(received) == ["charge.success", "refund.pending", "refund.processed"]
    assert gateway.stats()["refund_calls"] == 1
    assert reload(claim).status == ClaimStatus.RELEASED  # nobody got tickets for it


def test_a_failed_delivery_is_retried_until_it_lands(live_server, gateway):
    """The webhook URL was wrong when the customer paid (404); the sandbox
    retries on Paystack's backoff (compressed), and once the URL is put right
    the next retry confirms the payment."""
    claim = make_claim()
    started = start_payment(live_server, claim)
    gateway.app.webhook_url = live_server.url + "/api/v1/webhooks/paystack-typo/"

    gateway.pay(started["reference"])

    payment = Payment.objects.get(pk=started["payment_id"])
    wait_for(lambda: len(gateway.transaction(payment.reference)["webhooks"]) >= 2)
    assert reload(payment).status == "PENDING"
    gateway.app.webhook_url = live_server.url + WEBHOOK_PATH
    wait_for(lambda: reload(payment).status == "CONFIRMED")
    # The sandbox records a delivery's answer once our response reaches it,
    # a moment after the webhook's transaction committed.
    wait_for(lambda: gateway.transaction(payment.reference)["webhooks"][-1]["result"] == 200)
    attempts = gateway.transaction(payment.reference)["webhooks"]
    assert [a["result"] for a in attempts[:2]] == [404, 404]
    assert [a["attempt"] for a in attempts] == list(range(1, len(attempts) + 1))
    assert payment.events.filter(kind="webhook_received").count() == 1


def test_a_dispute_over_http_flags_payment_and_claim(live_server, gateway):
    claim = make_claim()
    started = start_payment(live_server, claim)
    gateway.pay(started["reference"])
    payment = Payment.objects.get(pk=started["payment_id"])
    wait_for(lambda: reload(payment).status == "CONFIRMED")

    sent = gateway.dispute(started["reference"], event="create")

    assert [w for w in sent["webhooks"]] == [200]
    payment = reload(payment)
    assert payment.dispute == "open"
    assert reload(claim).disputed_at is not None
    assert reload(claim).status == ClaimStatus.CONFIRMED
    gateway.dispute(started["reference"], event="resolve", resolution="declined")
    assert reload(payment).dispute == "won"
    assert reload(claim).disputed_at is None
