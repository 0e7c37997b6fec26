"""Paying for a released claim. ``payment_open`` checks the
claim, then writes the payment; a release landing in between would leave a
live checkout link for a claim that was already released. The claim row lock
``payment_open`` takes (``claims.services.claim_lock``) closes the gap: first
the race with the lock taken away, then the lock holding."""

from __future__ import annotations

import pytest

from claims.domain import ReleaseReason
from claims.models import Claim
from claims.services import claim_release
from payments.models import Payment
from payments.services import initialize
from tests.support.payments import make_claim
from tests.support.races import Between

pytestmark = pytest.mark.django_db(transaction=True)


def release(claim):
    return lambda: claim_release(
        claim_id=claim.pk, reason=ReleaseReason.CUSTOMER, customer_id=claim.customer_id
    )


def open_with_a_release_in_between(monkeypatch, claim) -> tuple[Between, Payment]:
    between = Between(monkeypatch, initialize, "claim_lock", release(claim))
    start = initialize.payment_open(claim_id=claim.pk, customer_id=claim.customer_id)
    between.finish()
    return between, start.payment


def test_without_the_claim_lock_a_payment_opens_for_a_released_claim(monkeypatch):
    def claim_unlocked(*, claim_id, customer_id=None):
        return Claim.objects.select_related("customer").get(pk=claim_id, customer_id=customer_id)

    monkeypatch.setattr(initialize, "claim_lock", claim_unlocked)
    claim = make_claim()
    between, payment = open_with_a_release_in_between(monkeypatch, claim)
    assert between.state == "done"  # the release went straight through
    claim.refresh_from_db()
    assert claim.status == "RELEASED"
    assert claim.released_at < payment.created_at  # a checkout link for a released claim
    assert payment.status == "INITIALIZING"


def test_the_claim_lock_makes_the_release_wait_for_the_payment(monkeypatch):
    claim = make_claim()
    between, payment = open_with_a_release_in_between(monkeypatch, claim)
    # The release waited on the claim row until the payment was written: it
    # could not slip in between the check and the payment.
    assert between.state == "blocked"
    assert Payment.objects.filter(claim=claim).count() == 1
    assert payment.status == "INITIALIZING"
    # It then went ahead: a customer may still give up a claim they started
    # paying for (a success arriving later is handled by invariant 5).
    assert Claim.objects.get(pk=claim.pk).status == "RELEASED"
