"""Merchant-side refusals (a rotated key, a request the gateway finds
invalid) are our faults: the buyer keeps the claim and hears 503 +
Retry-After, staff get an incident, and the claim gets the lost time back
once the gateway takes the payment. Against the sandbox over HTTP."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from claims.domain import ClaimStatus
from claims.models import Claim
from payments.models import GatewayIncident, Payment
from payments.selectors import gateway_incidents_open, payments_needing_staff
from payments.services import (
    paying_claims_expire,
    payment_settle_before_expiry,
    payment_verify_now,
    payments_reconcile,
)
from tests.support.factories import bearer
from tests.support.payments import held_tickets, kinds, make_claim, pending_payment, reload

pytestmark = pytest.mark.django_db


def start(api, claim):
    return api.post(f"/api/v1/claims/{claim.id}/payments/", format="json", **bearer(claim.customer))


def blocked_minutes_ago(payment: Payment, minutes: int) -> None:
    """The refusal happened ``minutes`` ago, and its retry is due."""
    Payment.objects.filter(pk=payment.pk).update(
        blocked_since=timezone.now() - timedelta(minutes=minutes), next_check_at=timezone.now()
    )


@pytest.mark.parametrize("fault", [{"reject_key": True}, {"fail_initialize_permanently": True}])
def test_refusal_keeps_the_claim_and_answers_503(api, sandbox, fault):
    sandbox.config(**fault)
    claim = make_claim(quantity=2)
    expires_at = claim.expires_at

    response = start(api, claim)

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "payments_unavailable"
    assert response["Retry-After"] == "30"
    claim = reload(claim)
    assert claim.status == ClaimStatus.CLAIMED
    assert claim.payment_in_flight is True  # payments owns its expiry now
    assert claim.expires_at == expires_at
    assert held_tickets(claim) == 2
    payment = Payment.objects.get()
    assert payment.status == "INITIALIZING"
    assert payment.events.filter(kind="state_change").count() == 0  # never FAILED
    assert payments_needing_staff().filter(pk=payment.pk).count() == 1
    assert gateway_incidents_open().get().failures == 1


def test_every_refusal_counts_on_one_open_incident(api, sandbox):
    sandbox.config(reject_key=True)
    for _ in range(3):
        assert start(api, make_claim()).status_code == 503
    incident = GatewayIncident.objects.get()
    assert (incident.failures, incident.resolved_at, incident.last_http_status) == (3, None, 401)
    assert incident.last_message == "Invalid key"


def test_retry_before_its_turn_is_503_without_a_gateway_call(api, sandbox):
    sandbox.config(reject_key=True)
    claim = make_claim()
    start(api, claim)
    calls = sandbox.stats()["initialize_calls"]

    again = start(api, claim)

    assert again.status_code == 503
    assert again.json()["error"]["code"] == "payments_unavailable"
    assert sandbox.stats()["initialize_calls"] == calls
    assert Payment.objects.count() == 1


def test_once_fixed_the_retry_goes_through_and_the_claim_gets_the_outage_back(api, sandbox):
    sandbox.config(reject_key=True)
    claim = make_claim()
    start(api, claim)
    payment = Payment.objects.get()
    blocked_minutes_ago(payment, 7)
    expires_before = reload(claim).expires_at
    sandbox.config(reject_key=False)  # the key was put right

    response = start(api, claim)

    assert response.status_code == 200
    assert response.json()["status"] == "PENDING"
    assert response.json()["authorization_url"]
    payment = reload(payment)
    assert payment.status == "PENDING"
    assert payment.blocked_since is None
    extended = reload(claim).expires_at - expires_before
    assert timedelta(minutes=7) <= extended < timedelta(minutes=7, seconds=5)
    assert GatewayIncident.objects.get().resolved_at is not None
    assert gateway_incidents_open().count() == 0
    assert kinds(payment)[-2:] == ["initialize_answer", "state_change"]


def test_a_payment_getting_through_makes_every_blocked_one_due(api, sandbox):
    sandbox.config(reject_key=True)
    first = make_claim()
    start(api, first)
    blocked = Payment.objects.get()
    assert blocked.next_check_at > timezone.now()
    sandbox.config(reject_key=False)

    assert start(api, make_claim()).status_code == 201  # someone else's new payment

    assert reload(blocked).next_check_at <= timezone.now()
    assert payments_reconcile() == {"initialize:pending": 1}
    assert reload(blocked).status == "PENDING"


def test_reconciliation_retries_blocked_payments_past_the_claim_expiry(api, sandbox):
    sandbox.config(reject_key=True)
    claim = make_claim()
    start(api, claim)
    payment = Payment.objects.get()
    Claim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    blocked_minutes_ago(payment, 9)

    assert payments_reconcile() == {"initialize:blocked": 1}  # still refused
    assert reload(payment).status == "INITIALIZING"
    assert GatewayIncident.objects.get().failures == 2

    sandbox.config(reject_key=False)
    blocked_minutes_ago(payment, 10)
    assert payments_reconcile() == {"initialize:pending": 1}
    claim = reload(claim)
    assert claim.status == ClaimStatus.CLAIMED
    assert claim.expires_at > timezone.now() + timedelta(minutes=8)  # 10 min back, 1 min spent


def test_expiry_leaves_a_blocked_claim_alone(api, sandbox, django_capture_on_commit_callbacks):
    sandbox.config(reject_key=True)
    claim = make_claim()
    start(api, claim)
    Claim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(minutes=5))

    assert payment_settle_before_expiry(claim_id=claim.id) is False
    with django_capture_on_commit_callbacks(execute=True):
        report = paying_claims_expire()

    assert (report.released, report.left_alone) == (0, 1)
    assert reload(claim).status == ClaimStatus.CLAIMED
    assert held_tickets(claim) == 1
    assert sandbox.stats()["verify_calls"] == 0


def test_a_refused_key_at_verify_is_an_incident_not_a_verdict(api, sandbox):
    payment = pending_payment(api)
    sandbox.config(reject_key=True)

    assert payment_verify_now(payment_id=payment.pk, actor="staff:test") == "refused"

    assert reload(payment).status == "PENDING"
    assert reload(payment.claim).status == ClaimStatus.CLAIMED
    incident = GatewayIncident.objects.get()
    assert (incident.operation, incident.failures) == ("verify", 1)
    sandbox.config(reject_key=False)
    payment_verify_now(payment_id=payment.pk, actor="staff:test")
    assert reload(incident).resolved_at is not None


def test_a_blocked_claim_is_held_only_up_to_the_bound(
    api, sandbox, settings, django_capture_on_commit_callbacks
):
    """A refusal that never clears (or that only this payment meets) must not
    hold the tickets for ever: past PAYMENT_IN_PROGRESS_MAX_SECONDS after the
    claim's expiry the payment is failed (the gateway never saw it) and the
    claim released."""
    settings.PAYMENT_IN_PROGRESS_MAX_SECONDS = 600
    sandbox.config(reject_key=True)
    claim = make_claim()
    start(api, claim)
    payment = Payment.objects.get()
    sandbox.config(reject_key=False)  # verify works; only this payment was refused
    Payment.objects.filter(pk=payment.pk).update(next_check_at=timezone.now())

    Claim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(seconds=599))
    with django_capture_on_commit_callbacks(execute=True):
        assert paying_claims_expire().released == 0
    assert reload(claim).status == ClaimStatus.CLAIMED

    Claim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(seconds=601))
    with django_capture_on_commit_callbacks(execute=True):
        assert paying_claims_expire().released == 1

    assert reload(payment).status == "FAILED"
    assert reload(payment).failure_reason == "the gateway never saw this payment"
    claim = reload(claim)
    assert (claim.status, claim.release_reason) == (ClaimStatus.RELEASED, "expired")
    assert held_tickets(claim) == 0
