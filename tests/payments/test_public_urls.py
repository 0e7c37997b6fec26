"""Checkout and callback URLs follow the host the customer used (or
PUBLIC_BASE_URL), so a phone on the LAN can pay."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from devtools.sandbox import SandboxServer
from fairqueue.faults import InjectedFault, fault_armed
from payments.models import Payment
from payments.services import payment_initialize, payments_reconcile
from tests.support.factories import bearer
from tests.support.payments import make_claim

LAN_HOST = "192.168.1.20:8000"


def start(api, claim, host: str):
    return api.post(
        f"/api/v1/claims/{claim.id}/payments/",
        format="json",
        HTTP_HOST=host,
        **bearer(claim.customer),
    )


@pytest.mark.django_db
def test_the_callback_follows_the_host_the_customer_used(api, sandbox, settings):
    settings.PUBLIC_BASE_URL = ""
    settings.ALLOWED_HOSTS = ["192.168.1.20", "localhost"]
    claim = make_claim()

    response = start(api, claim, LAN_HOST)

    assert response.status_code == 201, response.json()
    tx = sandbox.transaction(response.json()["reference"])
    assert tx["callback_url"] == f"http://{LAN_HOST}/payments/return/"


@pytest.mark.django_db
def test_public_base_url_wins_when_set(api, sandbox, settings):
    settings.PUBLIC_BASE_URL = "https://tickets.example.test/"
    settings.ALLOWED_HOSTS = ["192.168.1.20"]
    claim = make_claim()

    response = start(api, claim, LAN_HOST)

    tx = sandbox.transaction(response.json()["reference"])
    assert tx["callback_url"] == "https://tickets.example.test/payments/return/"


@pytest.mark.django_db
def test_a_retried_initialize_keeps_the_customers_host(sandbox, settings, fault_hooks):
    settings.PUBLIC_BASE_URL = ""
    claim = make_claim()
    with fault_armed("payment.after_initializing"), pytest.raises(InjectedFault):
        payment_initialize(
            claim_id=claim.id, customer_id=claim.customer_id, base_url=f"http://{LAN_HOST}"
        )
    payment = Payment.objects.get(claim=claim)
    Payment.objects.filter(pk=payment.pk).update(
        created_at=timezone.now() - timedelta(hours=1),
        next_check_at=timezone.now() - timedelta(seconds=1),
    )

    assert payments_reconcile() == {"initialize:pending": 1}

    tx = sandbox.transaction(payment.reference)
    assert tx["callback_url"] == f"http://{LAN_HOST}/payments/return/"


def test_a_sandbox_on_every_interface_shows_its_checkout_on_the_customers_host():
    everywhere = SandboxServer(host="0.0.0.0", port=0, secret_key="sk_test_x")  # noqa: S104
    local = SandboxServer(host="127.0.0.1", port=0, secret_key="sk_test_x")
    body = {"callback_url": f"http://{LAN_HOST}/payments/return/"}
    try:
        assert everywhere.app.checkout_base(body) == f"http://192.168.1.20:{everywhere.port}"
        assert local.app.checkout_base(body) == f"http://127.0.0.1:{local.port}"
    finally:
        everywhere.httpd.server_close()
        local.httpd.server_close()
