"""Several refund requests for one payment at once (the automatic refund, a
staff action, a second worker) make one refund and one POST /refund. First
the race with the guards switched off (the payment row lock, the claim row
lock under which the purchase's account is read, the conditional UPDATE of
its status, and the partial unique index "one open refund per payment"
behind them), then the guards holding."""

from __future__ import annotations

import threading
from contextlib import contextmanager

import pytest
import requests
from django.db import connection

from claims.models import Claim
from claims.services import purchase_balance
from fairqueue.errors import InvalidTransition
from payments.models import Payment, Refund
from payments.paystack import GatewayPermanentError
from payments.services import gateway_incident_open, payment_refund, refunds
from payments.services.incidents import gateway_incident_record
from tests.support.payments import payment_row
from tests.support.races import race

pytestmark = pytest.mark.django_db(transaction=True)

CALLERS = 5


@contextmanager
def one_refund_guard_off(monkeypatch):
    everyone_read = threading.Barrier(CALLERS, timeout=10)
    first_look = threading.local()

    def unlocked(*, payment_id):
        payment = Payment.objects.get(pk=payment_id)
        if not getattr(first_look, "done", False):
            first_look.done = True
            everyone_read.wait()  # all have seen REFUND_REQUIRED before anyone writes
        return payment

    def unconditional(*, payment, target, **kwargs):
        Payment.objects.filter(pk=payment.pk).update(status=target)
        payment.status = target
        return True

    balances_read = threading.Barrier(CALLERS, timeout=10)

    first_read = threading.local()

    def balance_unguarded(claim):
        balance = purchase_balance(claim)
        if not getattr(first_read, "done", False):
            first_read.done = True
            balances_read.wait()  # all have read the account before anyone writes to it
        return balance

    monkeypatch.setattr(refunds, "payment_lock", unlocked)
    monkeypatch.setattr(refunds, "payment_transition", unconditional)
    monkeypatch.setattr(refunds, "claim_lock", lambda *, claim_id: Claim.objects.get(pk=claim_id))
    monkeypatch.setattr(refunds, "purchase_balance", balance_unguarded)
    constraint = next(
        c for c in Refund._meta.constraints if c.name == "refund_one_open_per_payment"
    )
    with connection.schema_editor() as editor:
        editor.remove_constraint(Refund, constraint)
    try:
        yield
    finally:
        Refund.objects.update(status="FAILED")
        with connection.schema_editor() as editor:
            editor.add_constraint(Refund, constraint)


def refund_concurrently(payment: Payment) -> list:
    def call(n: int):
        return payment_refund(payment_id=payment.pk, actor=f"caller{n}", reason="race")

    return race(call, list(range(CALLERS)))


def test_without_the_guards_the_gateway_is_asked_to_refund_several_times(sandbox, monkeypatch):
    sandbox.config(send_webhooks=False, refund_outcome="manual")
    payment = payment_row(reference="race-off", amount=5000, status="REFUND_REQUIRED")
    sandbox_paid(sandbox, payment)

    with one_refund_guard_off(monkeypatch):
        results = refund_concurrently(payment)

    made = [r for r in results if isinstance(r, Refund)]
    assert len(made) == CALLERS, results  # the race: a refund per caller
    assert Refund.objects.filter(payment=payment).count() == CALLERS
    assert sandbox.stats()["refund_calls"] == CALLERS


def test_with_the_guards_one_refund_and_one_gateway_call(sandbox):
    sandbox.config(send_webhooks=False, refund_outcome="manual")
    payment = payment_row(reference="race-on", amount=5000, status="REFUND_REQUIRED")
    sandbox_paid(sandbox, payment)

    results = refund_concurrently(payment)

    made = [r for r in results if isinstance(r, Refund)]
    refused = [r for r in results if isinstance(r, InvalidTransition)]
    assert (len(made), len(refused)) == (1, CALLERS - 1), results
    assert Refund.objects.filter(payment=payment).count() == 1
    assert sandbox.stats()["refund_calls"] == 1
    assert Payment.objects.get(pk=payment.pk).status == "REFUND_PENDING"


def test_concurrent_merchant_refusals_count_on_one_incident():
    error = GatewayPermanentError("Invalid key", status_code=401)

    results = race(
        lambda n: gateway_incident_record(operation="initialize", error=error, reference=f"r{n}"),
        list(range(10)),
    )

    assert not [r for r in results if isinstance(r, Exception)], results
    incident = gateway_incident_open(operation="initialize")
    assert incident.failures == 10
    assert {r.pk for r in results} == {incident.pk}


def sandbox_paid(sandbox, payment: Payment) -> None:
    """The sandbox holds a paid transaction under the payment's reference."""
    requests.post(
        f"{sandbox.url}/transaction/initialize",
        json={"email": "a@example.test", "amount": payment.amount, "reference": payment.reference},
        headers={"Authorization": f"Bearer {sandbox.app.secret_key}"},
        timeout=5,
    ).raise_for_status()
    sandbox.pay(payment.reference, send_webhook=False)
