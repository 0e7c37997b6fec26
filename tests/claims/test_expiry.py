"""claims_expire: only unpaid, expired CLAIMED claims are released; a claim
with a payment in flight is released only when payments says so."""

from __future__ import annotations

import sys
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

import payments.services
from claims import tasks
from claims.models import Claim
from claims.services import claim_create, claims_expire
from claims.store import claim_store
from events.models import Event, Ticket
from payments.models import Payment
from tests.claims.conftest import admit_directly, counter, make_customers, on_sale

pytestmark = pytest.mark.django_db


@pytest.fixture
def run_on_commit(django_capture_on_commit_callbacks):
    """Run the after-commit work (Redis give-back, event status) at once."""

    def run(fn, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return fn(*args, **kwargs)

    return run


def claims_for(tier, n: int) -> list[Claim]:
    return [
        claim_create(
            event_id=tier.event_id,
            customer_id=a.customer.id,
            admission_token=a.token,
            tier_id=tier.id,
            quantity=1,
        )
        for a in admit_directly(tier.event, make_customers(n))
    ]


def expire(*claims: Claim) -> None:
    Claim.objects.filter(pk__in=[c.pk for c in claims]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )


def pay(claim: Claim, status: str = "PENDING") -> Payment:
    return Payment.objects.create(
        claim=claim,
        customer_id=claim.customer_id,
        reference=f"fq_{uuid.uuid4().hex}",
        email="buyer@example.test",
        amount=claim.amount,
        currency=claim.currency,
        status=status,
        next_check_at=timezone.now() + timedelta(minutes=5),
    )


def status_of(claim: Claim) -> str:
    return Claim.objects.get(pk=claim.pk).status


@pytest.fixture
def settle_calls(monkeypatch):
    """payments' check before expiry, answering as the test says."""
    calls: list = []
    answer = {"value": False}

    def settle(*, claim_id):
        calls.append(claim_id)
        return answer["value"]

    monkeypatch.setattr(payments.services, "payment_settle_before_expiry", settle)
    return calls, answer


def test_expiry_releases_only_unpaid_expired_claims(run_on_commit, settle_calls):
    calls, _ = settle_calls
    tier = on_sale(tickets=10)
    unpaid, fresh, paying, paid = claims_for(tier, 4)
    expire(unpaid, paying, paid)
    pay(paying, "PENDING")
    Claim.objects.filter(pk=paid.pk).update(status="CONFIRMED")
    assert counter(tier) == 6

    report = run_on_commit(claims_expire)

    assert report.released == 1
    assert report.released_after_check == 0
    assert report.left_alone == 1
    released = Claim.objects.get(pk=unpaid.pk)
    assert (released.status, released.release_reason) == ("RELEASED", "expired")
    assert Ticket.objects.filter(claim=unpaid).count() == 0
    assert [status_of(c) for c in (fresh, paying, paid)] == ["CLAIMED", "CLAIMED", "CONFIRMED"]
    assert Ticket.objects.filter(claim__in=[fresh, paying, paid]).count() == 3
    assert calls == [paying.pk]  # only the claim with a payment in flight was checked
    assert counter(tier) == 7


def test_a_claim_whose_payment_payments_gave_up_on_is_released(run_on_commit, settle_calls):
    calls, answer = settle_calls
    answer["value"] = True
    tier = on_sale(tickets=10)
    (paying,) = claims_for(tier, 1)
    expire(paying)
    pay(paying, "INITIALIZING")

    report = run_on_commit(claims_expire)

    assert (report.released, report.released_after_check, report.left_alone) == (0, 1, 0)
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

    monkeypatch.setattr(payments.services, "payment_settle_before_expiry", settle)
    report = run_on_commit(claims_expire)
    assert (report.released_after_check, report.left_alone) == (1, 1)
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
    report = run_on_commit(claims_expire)
    assert (report.released, report.released_after_check, report.left_alone) == (0, 0, 1)
    assert status_of(paying) == "CLAIMED"
    assert Ticket.objects.filter(claim=paying).count() == 1


def test_without_the_payments_check_claims_with_payments_are_left_alone(run_on_commit, monkeypatch):
    monkeypatch.setitem(sys.modules, "payments.services", None)  # not importable
    tier = on_sale(tickets=10)
    unpaid, paying = claims_for(tier, 2)
    expire(unpaid, paying)
    pay(paying)
    report = run_on_commit(claims_expire)
    assert (report.released, report.left_alone) == (1, 1)
    assert status_of(unpaid) == "RELEASED"
    assert status_of(paying) == "CLAIMED"


def test_expiry_works_through_batches(run_on_commit):
    tier = on_sale(tickets=10)
    made = claims_for(tier, 5)
    expire(*made)
    report = run_on_commit(claims_expire, batch_size=2)
    assert report.released == 5
    assert Claim.objects.filter(status="RELEASED").count() == 5
    assert Ticket.objects.filter(claim__isnull=False).count() == 0
    assert counter(tier) == 10


def test_expiring_the_last_claims_puts_a_sold_out_event_back_on_sale(run_on_commit):
    tier = on_sale(tickets=2)
    made = claims_for(tier, 2)
    assert Event.objects.get(pk=tier.event_id).status == "SOLD_OUT"
    expire(made[0])
    run_on_commit(claims_expire)
    assert Event.objects.get(pk=tier.event_id).status == "ACTIVE"
    assert counter(tier) == 1


def test_the_task_is_single_flight(run_on_commit):
    tier = on_sale(tickets=10)
    (claim,) = claims_for(tier, 1)
    expire(claim)
    store = claim_store()
    token = store.lock_acquire(store.task_lock_key("claims_expire"), ttl_ms=10_000)
    assert run_on_commit(tasks.claims_expire) == {"skipped": "another run holds the lock"}
    assert status_of(claim) == "CLAIMED"
    store.lock_release(store.task_lock_key("claims_expire"), token)
    result = run_on_commit(tasks.claims_expire)
    assert result["released"] == 1
    assert status_of(claim) == "RELEASED"
