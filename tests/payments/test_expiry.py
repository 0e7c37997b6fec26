"""Expiry of a claim with a payment in flight asks the gateway first
(invariant 5): a paid claim whose webhook is late is left alone until the
gateway has been asked, and then confirmed."""

from datetime import timedelta

import pytest
from django.utils import timezone

from claims.domain import ClaimStatus
from claims.models import Claim
from fairqueue.faults import InjectedFault, fault_armed
from payments.models import Payment
from payments.services import (
    paying_claims_expire,
    payment_initialize,
    payment_settle_before_expiry,
)
from tests.support.payments import held_tickets, make_claim, pending_payment, reload

pytestmark = pytest.mark.django_db


def expire(claim: Claim) -> None:
    Claim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(seconds=1))


def test_no_payment_means_the_claim_may_go(sandbox):
    claim = make_claim()
    assert payment_settle_before_expiry(claim_id=claim.id) is True
    assert sandbox.stats()["verify_calls"] == 0


def test_paid_but_webhook_late_is_left_alone_and_confirmed(api, sandbox):
    payment = pending_payment(api)
    sandbox.pay(payment.reference, send_webhook=False)  # the webhook is late
    claim = payment.claim
    expire(claim)

    report = paying_claims_expire()

    assert (report.released, report.left_alone) == (0, 1)
    assert reload(payment).status == "CONFIRMED"  # asked the gateway: paid
    claim = reload(claim)
    assert claim.status == ClaimStatus.CONFIRMED
    assert held_tickets(claim) == 1
    assert sandbox.stats()["verify_calls"] == 1
    assert payment.events.filter(actor="expiry", kind="verify_result").count() == 1


def test_expiry_while_the_customer_is_paying_leaves_the_claim(api, sandbox):
    payment = pending_payment(api)
    sandbox.app.transactions[payment.reference]["status"] = "ongoing"
    expire(payment.claim)

    report = paying_claims_expire()

    assert report.left_alone == 1
    assert reload(payment).status == "PENDING"
    assert reload(payment.claim).status == ClaimStatus.CLAIMED
    assert held_tickets(payment.claim) == 1


def test_gateway_down_leaves_the_claim_alone(api, sandbox):
    payment = pending_payment(api)
    expire(payment.claim)
    sandbox.config(fail_next_n_with_5xx=3)

    report = paying_claims_expire()

    assert report.left_alone == 1
    assert reload(payment).status == "PENDING"
    assert reload(payment.claim).status == ClaimStatus.CLAIMED
    # Once the gateway answers (not paid), the claim goes.
    report = paying_claims_expire()
    assert report.released == 1
    assert reload(payment).status == "FAILED"
    claim = reload(payment.claim)
    assert claim.status == ClaimStatus.RELEASED
    assert claim.release_reason == "expired"
    assert held_tickets(claim) == 0


def test_unpaid_payment_is_failed_and_the_claim_expires(api, sandbox):
    payment = pending_payment(api)
    expire(payment.claim)

    assert payment_settle_before_expiry(claim_id=payment.claim_id) is True

    payment = reload(payment)
    assert payment.status == "FAILED"
    assert payment.gateway_status == "abandoned"
    # Releasing is the caller's job (it releases with reason "expired").
    assert reload(payment.claim).status == ClaimStatus.CLAIMED


def test_initialize_in_flight_is_not_interrupted(sandbox, fault_hooks):
    claim = make_claim()
    with fault_armed("payment.after_initializing"), pytest.raises(InjectedFault):
        payment_initialize(claim_id=claim.id, customer_id=claim.customer_id)
    expire(claim)

    # Its lease is still running: someone may be calling the gateway right now.
    assert payment_settle_before_expiry(claim_id=claim.id) is False
    assert sandbox.stats()["verify_calls"] == 0

    # Lease lapsed and the gateway never heard of it: nobody can have paid.
    Payment.objects.filter(claim=claim).update(next_check_at=timezone.now())
    assert payment_settle_before_expiry(claim_id=claim.id) is True
    assert Payment.objects.get(claim=claim).status == "FAILED"

