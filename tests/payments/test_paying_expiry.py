"""paying_claims_expire: an expired claim with a payment in flight is released
only when the gateway says its payment failed (invariant 5)."""

from __future__ import annotations

import pytest

from claims.models import Claim
from inventory.models import Ticket
from payments.services import expiry, paying_claims_expire
from tests.support.sales import claims_for, counter, expire, on_sale, pay, status_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def settle_calls(monkeypatch):
    """payments' check before expiry, answering as the test says."""
    calls: list = []
    answer = {"value": False}

    def settle(*, claim_id):
        calls.append(claim_id)
        return answer["value"]

    monkeypatch.setattr(expiry, "payment_settle_before_expiry", settle)
    return calls, answer


def test_only_expired_claims_with_a_payment_in_flight_are_checked(run_on_commit, settle_calls):
    calls, _ = settle_calls
    tier = on_sale(tickets=10)
    unpaid, fresh, paying, paid = claims_for(tier, 4)
    expire(unpaid, paying, paid)
    pay(paying, "PENDING")
    pay(fresh, "PENDING")  # in flight but not expired
    Claim.objects.filter(pk=paid.pk).update(status="CONFIRMED")
    assert counter(tier) == 6

    report = run_on_commit(paying_claims_expire)

    assert (report.released, report.left_alone) == (0, 1)
    assert calls == [paying.pk]  # not the unpaid one: claims' own expiry takes that
    statuses = [status_of(c) for c in (unpaid, fresh, paying, paid)]
    assert statuses == ["CLAIMED", "CLAIMED", "CLAIMED", "CONFIRMED"]
    assert Ticket.objects.filter(claim__isnull=False).count() == 4
    assert counter(tier) == 6


def test_a_claim_whose_payment_payments_gave_up_on_is_released(run_on_commit, settle_calls):
    calls, answer = settle_calls
    answer["value"] = True
    tier = on_sale(tickets=10)
    (paying,) = claims_for(tier, 1)
    expire(paying)
    pay(paying, "INITIALIZING")

    report = run_on_commit(paying_claims_expire)

    assert (report.released, report.left_alone) == (1, 0)
    assert calls == [paying.pk]
    assert status_of(paying) == "RELEASED"
    assert counter(tier) == 10


def test_a_failing_payment_check_leaves_that_claim_and_goes_on(run_on_commit, monkeypatch):
    tier = on_sale(tickets=10)
    first, second = claims_for(tier, 2)
    expire(first, second)
    pay(first)
    pay(second)

    def settle(*, claim_id):
        if claim_id == first.pk:
            raise RuntimeError("gateway exploded")
        return True

    monkeypatch.setattr(expiry, "payment_settle_before_expiry", settle)
    report = run_on_commit(paying_claims_expire)
    assert (report.released, report.left_alone) == (1, 1)
    assert status_of(first) == "CLAIMED"
    assert status_of(second) == "RELEASED"


def test_an_unreachable_gateway_keeps_the_claim(run_on_commit, settings):
    """The real payments check, with the gateway down: nobody loses a claim
    they may have paid for (invariant 5)."""
    settings.PAYSTACK_BASE_URL = "http://127.0.0.1:9"
    settings.PAYSTACK_MAX_ATTEMPTS = 1
    settings.PAYSTACK_TIMEOUT_SECONDS = 0.5
    tier = on_sale(tickets=10)
    (paying,) = claims_for(tier, 1)
    expire(paying)
    pay(paying, "PENDING")
    report = run_on_commit(paying_claims_expire)
    assert (report.released, report.released, report.left_alone) == (0, 0, 1)
    assert status_of(paying) == "CLAIMED"
    assert Ticket.objects.filter(claim=paying).count() == 1
