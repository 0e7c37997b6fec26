"""Five concurrent "pay" calls for one claim make one payment and one gateway
initialize. First the race with the guards (the claim row lock that
payment_open takes, and the partial unique index "one live payment per
claim" behind it) switched off, then the guards holding."""

from contextlib import contextmanager

import pytest
from django.db import connection
from rest_framework.test import APIClient

from claims.models import Claim
from payments.models import Payment
from payments.services import initialize
from tests.support.factories import bearer
from tests.support.payments import make_claim
from tests.support.races import race

pytestmark = pytest.mark.django_db(transaction=True)

CALLERS = 5


@contextmanager
def live_payment_guard_off(monkeypatch):
    def claim_unlocked(*, claim_id, customer_id=None):
        return Claim.objects.select_related("customer").get(pk=claim_id, customer_id=customer_id)

    monkeypatch.setattr(initialize, "claim_lock", claim_unlocked)
    constraint = next(
        c for c in Payment._meta.constraints if c.name == "payment_one_live_per_claim"
    )
    with connection.schema_editor() as editor:
        editor.remove_constraint(Payment, constraint)
    try:
        yield
    finally:
        # Rows that break the guard must leave the live states before it returns.
        Payment.objects.update(status="FAILED")
        with connection.schema_editor() as editor:
            editor.add_constraint(Payment, constraint)


def pay_concurrently(claim) -> list:
    headers = bearer(claim.customer)

    def call(_: int):
        return APIClient().post(f"/api/v1/claims/{claim.id}/payments/", format="json", **headers)

    return race(call, list(range(CALLERS)))


def test_without_the_guard_concurrent_calls_double_initialize(sandbox, monkeypatch):
    # The race is timing-dependent; it needs to show once in a few rounds.
    with live_payment_guard_off(monkeypatch):
        for _ in range(10):
            claim = make_claim()
            pay_concurrently(claim)
            if Payment.objects.filter(claim=claim).count() > 1:
                break
        created = Payment.objects.filter(claim=claim).count()
        calls = sandbox.stats()["initialize_created"]
    assert created > 1
    assert calls >= created  # each duplicate row went to the gateway too


def test_the_guard_makes_one_payment_and_one_gateway_call(sandbox):
    for round_ in range(3):
        claim = make_claim()
        answers = pay_concurrently(claim)

        assert all(not isinstance(a, Exception) for a in answers), answers
        codes = sorted(a.status_code for a in answers)
        # One caller created it; the others got the live payment (200), or
        # were told to come back while it was being set up (503 + Retry-After).
        assert codes.count(201) == 1, codes
        assert set(codes) <= {200, 201, 503}
        payment = Payment.objects.get(claim=claim)
        assert {a.json()["payment_id"] for a in answers if a.status_code != 503} == {
            str(payment.id)
        }
        assert sandbox.stats()["initialize_created"] == round_ + 1
        assert sandbox.stats()["initialize_calls"] == round_ + 1
        payment.refresh_from_db()
        assert payment.status == "PENDING"


def test_after_a_decline_concurrent_retries_make_one_new_payment(sandbox):
    claim = make_claim()
    first = pay_concurrently(claim)
    declined = Payment.objects.get(claim=claim)
    sandbox.pay(declined.reference, outcome="failed")
    APIClient().get("/payments/return/", {"reference": declined.reference})
    declined.refresh_from_db()
    assert declined.status == "FAILED" and first

    answers = pay_concurrently(claim)  # "Try again", tapped in two tabs at once

    codes = sorted(a.status_code for a in answers)
    assert codes.count(201) == 1, codes
    assert set(codes) <= {200, 201, 503}
    retry = Payment.objects.exclude(pk=declined.pk).get(claim=claim)
    assert retry.status == "PENDING"
    assert Payment.objects.filter(claim=claim, status__in=["INITIALIZING", "PENDING"]).count() == 1
    assert sandbox.stats()["initialize_created"] == 2
