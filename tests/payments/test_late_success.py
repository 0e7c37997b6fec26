"""Invariant 5: a success that arrives for a released claim re-instates it
when its tickets are free, or else the payment is REFUND_REQUIRED. Never
silently dropped."""

import pytest
from django.utils import timezone

from claims.domain import ClaimStatus, ReleaseReason
from claims.models import Claim
from claims.services import claim_release, claims_expire
from inventory.models import Ticket
from payments.models import Payment
from tests.support.factories import CustomerFactory, TierFactory
from tests.support.payments import (
    held_tickets,
    make_claim,
    pending_payment,
    post_webhook,
    reload,
    transitions,
)

pytestmark = pytest.mark.django_db


def deliver_success(client, sandbox, payment):
    sandbox.pay(payment.reference, send_webhook=False)
    body, signature = sandbox.webhook(payment.reference)
    response = post_webhook(client, body, signature)
    assert response.status_code == 200
    return reload(payment)


def test_success_after_release_reinstates_when_tickets_are_free(api, client, sandbox):
    tier = TierFactory(inventory=3)
    claim = make_claim(tier=tier, quantity=2)
    payment = pending_payment(api, claim)
    claim_release(claim_id=claim.id, reason=ReleaseReason.EXPIRED)  # expired meanwhile
    assert held_tickets(claim) == 0

    payment = deliver_success(client, sandbox, payment)

    assert payment.status == "CONFIRMED"
    claim = reload(claim)
    assert claim.status == ClaimStatus.CONFIRMED
    assert held_tickets(claim) == 2  # the tickets were taken again
    assert transitions(payment)[-1] == ("PENDING", "CONFIRMED")
    reason = payment.events.filter(kind="state_change").last().data["reason"]
    assert reason == "late success: claim re-instated"


def test_success_after_release_with_tickets_gone_requires_a_refund(api, client, sandbox):
    tier = TierFactory(inventory=1)
    claim = make_claim(tier=tier)
    payment = pending_payment(api, claim)
    claim_release(claim_id=claim.id, reason=ReleaseReason.EXPIRED)
    someone_else = make_claim(tier=tier, customer=CustomerFactory())  # took the last ticket

    payment = deliver_success(client, sandbox, payment)

    assert payment.status == "REFUND_REQUIRED"
    assert payment.flag_reason  # shown to staff
    assert payment.paid_amount == payment.amount
    assert reload(claim).status == ClaimStatus.RELEASED
    assert held_tickets(claim) == 0
    # The other buyer keeps their ticket: nothing was oversold.
    assert held_tickets(someone_else) == 1
    assert Ticket.objects.filter(tier=tier, claim__isnull=False).count() == 1
    assert transitions(payment)[-1] == ("PENDING", "REFUND_REQUIRED")


def test_success_for_a_payment_we_failed_takes_the_same_path(api, client, sandbox):
    claim = make_claim()
    payment = pending_payment(api, claim)
    # The customer declined once (found when they came back: we failed it),
    # did not try again, and the hold ran out; then the same checkout was
    # paid after all.
    sandbox.pay(payment.reference, outcome="failed")
    assert client.get("/payments/return/", {"reference": payment.reference}).status_code == 200
    assert reload(payment).status == "FAILED"
    Claim.objects.filter(pk=claim.pk).update(expires_at=timezone.now())
    claims_expire()
    assert reload(claim).status == ClaimStatus.RELEASED

    payment = deliver_success(client, sandbox, payment)

    assert payment.status == "CONFIRMED"
    assert reload(claim).status == ClaimStatus.CONFIRMED
    assert held_tickets(claim) == 1
    assert transitions(payment)[-2:] == [("PENDING", "FAILED"), ("FAILED", "CONFIRMED")]


def test_success_for_a_claim_paid_by_another_payment_requires_a_refund(api, client, sandbox):
    claim = make_claim()
    first = pending_payment(api, claim)
    # A first payment failed (claim kept for this test), a second one was paid.
    Payment.objects.filter(pk=first.pk).update(status="FAILED")
    second = pending_payment(api, claim)
    second = deliver_success(client, sandbox, second)
    assert second.status == "CONFIRMED"

    first = deliver_success(client, sandbox, first)

    assert first.status == "REFUND_REQUIRED"
    assert "already paid" in first.flag_reason
    assert reload(claim).status == ClaimStatus.CONFIRMED
    assert reload(second).status == "CONFIRMED"
