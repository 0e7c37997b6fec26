"""Declines send no webhook (as with Paystack): they are found when the
customer comes back to the callback page, or by reconciliation within one
interval. A declined attempt keeps the claim until its expiry: the buyer
tries again with a new payment. Non-final statuses hold tickets only up to
a bound."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from claims.domain import ClaimStatus
from claims.models import Claim
from claims.services import claims_expire
from payments.services import paying_claims_expire, payments_reconcile
from tests.support.factories import UserFactory
from tests.support.payments import (
    held_tickets,
    make_claim,
    pending_payment,
    post_webhook,
    reload,
    transitions,
)

pytestmark = pytest.mark.django_db

RETURN = "/payments/return/"


def payments_reconcile_now(payment) -> None:
    """Reconciliation, with this payment due now."""
    type(payment).objects.filter(pk=payment.pk).update(next_check_at=timezone.now())
    payments_reconcile()


def test_a_decline_is_failed_within_one_reconcile_interval_without_a_webhook(
    api, sandbox, settings
):
    settings.RECONCILE_INTERVAL_SECONDS = 1
    claim = make_claim(quantity=2)
    payment = pending_payment(api, claim)
    sandbox.pay(payment.reference, outcome="failed")
    assert sandbox.transaction(payment.reference)["webhooks"] == []  # none is sent
    assert payments_reconcile() == {}  # the interval has not passed yet
    assert reload(payment).status == "PENDING"

    time.sleep(1.05)  # one reconcile interval
    assert payments_reconcile() == {"verify:failed": 1}

    assert reload(payment).status == "FAILED"
    claim = reload(claim)
    # The hold stays: the buyer may try another card until the claim expires.
    assert claim.status == ClaimStatus.CLAIMED
    assert held_tickets(claim) == 2


def test_a_declined_claim_is_released_by_its_expiry(
    api, sandbox, django_capture_on_commit_callbacks
):
    claim = make_claim(quantity=2)
    payment = pending_payment(api, claim)
    sandbox.pay(payment.reference, outcome="failed")
    payments_reconcile_now(payment)
    assert reload(claim).status == ClaimStatus.CLAIMED
    Claim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    with django_capture_on_commit_callbacks(execute=True):
        claims_expire()  # no payment in flight now: plain claim expiry

    claim = reload(claim)
    assert (claim.status, claim.release_reason) == (ClaimStatus.RELEASED, "expired")
    assert held_tickets(claim) == 0


def test_after_a_decline_the_buyer_tries_again_and_pays(api, client, sandbox):
    claim = make_claim(quantity=2)
    first = pending_payment(api, claim)
    sandbox.pay(first.reference, outcome="failed")
    client.get(RETURN, {"reference": first.reference})
    assert reload(first).status == "FAILED"

    second = pending_payment(api, claim)  # "Try again": a new payment, same claim

    assert second.pk != first.pk and second.reference != first.reference
    sandbox.pay(second.reference, send_webhook=False)
    post_webhook(client, *sandbox.webhook(second.reference))
    assert reload(second).status == "CONFIRMED"
    assert reload(claim).status == ClaimStatus.CONFIRMED
    assert held_tickets(claim) == 2
    # The declined attempt succeeds after all (the gateway changed its mind):
    # the claim is paid already, so this money goes back, never a second sale.
    sandbox.pay(first.reference, send_webhook=False)
    post_webhook(client, *sandbox.webhook(first.reference))
    assert reload(first).status in ("REFUND_REQUIRED", "REFUND_PENDING")
    assert reload(claim).status == ClaimStatus.CONFIRMED
    assert held_tickets(claim) == 2


def test_the_return_page_verifies_at_once(api, client, sandbox):
    claim = make_claim()
    payment = pending_payment(api, claim)
    sandbox.pay(payment.reference, outcome="failed")

    page = client.get(RETURN, {"trxref": payment.reference, "reference": payment.reference})

    assert page.status_code == 200
    assert b"did not go through" in page.content
    assert b"Try again" in page.content
    assert reload(payment).status == "FAILED"
    assert reload(claim).status == ClaimStatus.CLAIMED
    assert sandbox.stats()["verify_calls"] == 1


def test_the_return_page_confirms_a_success_before_its_webhook(api, client, sandbox):
    payment = pending_payment(api)
    sandbox.pay(payment.reference, send_webhook=False)

    page = client.get(RETURN, {"reference": payment.reference})

    assert b"Your tickets are confirmed" in page.content
    assert reload(payment).status == "CONFIRMED"
    assert reload(payment.claim).status == ClaimStatus.CONFIRMED
    # The webhook that follows changes nothing more.
    body, signature = sandbox.webhook(payment.reference)
    assert post_webhook(client, body, signature).json() == {"status": "processed"}
    assert transitions(payment).count(("PENDING", "CONFIRMED")) == 1


def test_reloading_the_return_page_asks_the_gateway_at_most_every_few_seconds(
    api, client, sandbox, settings
):
    settings.PAYMENT_RETURN_VERIFY_SECONDS = 60
    payment = pending_payment(api)  # the customer has not paid yet: abandoned

    for _ in range(5):
        assert client.get(RETURN, {"reference": payment.reference}).status_code == 200

    assert sandbox.stats()["verify_calls"] == 1
    assert reload(payment).status == "PENDING"  # abandoned, but the claim still runs
    assert reload(payment.claim).status == ClaimStatus.CLAIMED


@pytest.mark.parametrize("status", ["ongoing", "pending", "processing", "queued"])
def test_a_non_final_status_holds_the_claim_past_expiry_up_to_the_bound(
    api, sandbox, settings, status, django_capture_on_commit_callbacks
):
    settings.PAYMENT_IN_PROGRESS_MAX_SECONDS = 600
    claim = make_claim()
    payment = pending_payment(api, claim)
    sandbox.pay(payment.reference, outcome=status)
    Claim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(seconds=599))

    with django_capture_on_commit_callbacks(execute=True):
        report = paying_claims_expire()

    assert (report.released, report.left_alone) == (0, 1)
    assert reload(claim).status == ClaimStatus.CLAIMED
    assert reload(payment).gateway_status == status
    assert reload(payment).overdue_at is None


def test_past_the_bound_the_claim_goes_and_staff_are_alerted(
    api, client, sandbox, settings, caplog, django_capture_on_commit_callbacks
):
    settings.PAYMENT_IN_PROGRESS_MAX_SECONDS = 600
    claim = make_claim()
    payment = pending_payment(api, claim)
    sandbox.pay(payment.reference, outcome="processing")
    Claim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(seconds=601))

    with django_capture_on_commit_callbacks(execute=True):
        report = paying_claims_expire()

    assert (report.released, report.left_alone) == (1, 0)
    claim = reload(claim)
    assert (claim.status, claim.release_reason) == (ClaimStatus.RELEASED, "expired")
    assert held_tickets(claim) == 0
    payment = reload(payment)
    assert payment.status == "PENDING"  # still watched
    assert payment.overdue_at is not None
    assert payment.events.filter(kind="overdue").count() == 1
    assert "still 'processing'" in caplog.text
    staff = type(client)()
    staff.force_login(UserFactory(username="ada", is_superuser=True))
    listed = staff.get("/admin/payments/payment/", {"attention": "overdue"})
    assert [p.reference for p in listed.context["cl"].result_list] == [payment.reference]

    # It succeeds after all: the late-success path (tickets still free here).
    sandbox.pay(payment.reference, send_webhook=False)
    body, signature = sandbox.webhook(payment.reference)
    post_webhook(client, body, signature)
    assert reload(payment).status == "CONFIRMED"
    assert reload(claim).status == ClaimStatus.CONFIRMED
