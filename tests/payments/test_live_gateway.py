"""The whole payment over real HTTP both ways: the app (pytest-django's live
server) calls the sandbox, the customer's browser uses the sandbox checkout,
and the sandbox sends its signed webhooks back to the app."""

import re
import time

import pytest
import requests

from claims.domain import ClaimStatus
from payments.models import Payment, WebhookReceipt
from tests.support.factories import bearer
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


def test_customer_declines(live_server, gateway):
    claim = make_claim()
    started = start_payment(live_server, claim)
    page = requests.get(started["authorization_url"], timeout=10)
    decline = re.search(r'action="([^"]+/decline)"', page.text).group(1)
    requests.post(gateway.url + decline, allow_redirects=False, timeout=10)

    payment = Payment.objects.get(pk=started["payment_id"])
    wait_for(lambda: reload(payment).status == "FAILED")
    claim = reload(claim)
    assert claim.status == ClaimStatus.RELEASED
    assert held_tickets(claim) == 0


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
    from payments.services import payment_verify_now

    payment_verify_now(payment_id=payment.pk, actor="staff:test")  # before the webhook lands
    assert reload(payment).status == "CONFIRMED"

    wait_for(lambda: gateway.transaction(payment.reference)["webhooks"])
    assert gateway.transaction(payment.reference)["webhooks"][0]["result"] == 200
    assert payment.events.filter(kind="webhook_received").count() == 1
    assert payment.events.filter(kind="state_change", to_status="CONFIRMED").count() == 1
