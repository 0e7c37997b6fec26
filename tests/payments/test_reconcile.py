"""payments_reconcile heals what crashes and lost webhooks leave behind."""

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from claims.domain import ClaimStatus
from claims.services import claims_expire
from fairqueue.faults import InjectedFault, fault_armed
from fairqueue.locks import SKIPPED, task_lock
from payments import tasks
from payments.models import Payment
from payments.services import payment_initialize, payments_due, payments_reconcile
from tests.support.payments import (
    held_tickets,
    kinds,
    make_claim,
    pending_payment,
    reload,
    transitions,
)


def time_passes(payment: Payment, seconds: int = 3600) -> None:
    """Make the payment look as old as it would be after ``seconds``."""
    Payment.objects.filter(pk=payment.pk).update(
        created_at=timezone.now() - timedelta(seconds=seconds),
        next_check_at=timezone.now() - timedelta(seconds=1),
    )


def crashed_payment(fault: str, claim=None) -> Payment:
    """A process that died at ``fault`` while starting a payment (the test
    asks for ``fault_hooks``)."""
    claim = claim or make_claim()
    with fault_armed(fault), pytest.raises(InjectedFault):
        payment_initialize(claim_id=claim.id, customer_id=claim.customer_id)
    return Payment.objects.get(claim=claim)


@pytest.mark.django_db
def test_crash_after_initializing_is_healed(sandbox, fault_hooks):
    payment = crashed_payment("payment.after_initializing")
    assert payment.status == "INITIALIZING"
    assert sandbox.stats()["initialize_calls"] == 0  # died before the gateway call

    assert payments_reconcile() == {}  # not stale yet: left alone
    assert reload(payment).status == "INITIALIZING"
    assert sandbox.stats()["initialize_calls"] == 0

    time_passes(payment)
    report = payments_reconcile()

    assert report == {"initialize:pending": 1}
    payment = reload(payment)
    assert payment.status == "PENDING"
    assert payment.authorization_url.startswith(f"{sandbox.url}/checkout/")
    assert sandbox.transaction(payment.reference)["amount"] == payment.amount  # same reference
    assert sandbox.stats()["initialize_created"] == 1
    assert kinds(payment) == ["initialize_requested", "initialize_answer", "state_change"]
    assert payment.events.get(kind="state_change").actor == "reconcile"
    assert reload(payment.claim).status == ClaimStatus.CLAIMED


@pytest.mark.django_db
def test_lost_initialize_answer_is_resolved_by_verify(api, sandbox, fault_hooks):
    # The gateway created the transaction, but we died before storing its answer:
    # nobody ever saw the authorization_url.
    payment = crashed_payment("payment.after_gateway_answer")
    assert payment.status == "INITIALIZING"
    assert sandbox.stats()["initialize_created"] == 1
    time_passes(payment)

    report = payments_reconcile()

    assert report == {"initialize:orphaned": 1}
    payment = reload(payment)
    # "Duplicate Transaction Reference" meant it got through: verified, not failed blindly.
    assert kinds(payment) == [
        "initialize_requested",
        "initialize_error",
        "verify_requested",
        "verify_result",
        "state_change",
    ]
    assert payment.events.get(kind="initialize_error").data["error"] == (
        "Duplicate Transaction Reference"
    )
    assert payment.status == "FAILED"
    claim = reload(payment.claim)
    assert claim.status == ClaimStatus.CLAIMED  # the customer keeps the claim...
    assert held_tickets(claim) == 1
    # ...and can start a fresh payment for it.
    fresh = pending_payment(api, claim)
    assert fresh.reference != payment.reference
    assert sandbox.stats()["initialize_created"] == 2


@pytest.mark.django_db
def test_pending_paid_but_webhook_lost_is_confirmed_by_verify(api, sandbox):
    payment = pending_payment(api)
    sandbox.pay(payment.reference, send_webhook=False)
    time_passes(payment)

    assert payments_reconcile() == {"verify:success": 1}

    payment = reload(payment)
    assert payment.status == "CONFIRMED"
    assert reload(payment.claim).status == ClaimStatus.CONFIRMED
    assert transitions(payment)[-1] == ("PENDING", "CONFIRMED")
    assert payment.events.filter(kind="verify_result").count() == 1


@pytest.mark.django_db
def test_pending_declined_is_failed_and_its_claim_kept_for_another_try(api, sandbox):
    payment = pending_payment(api)
    sandbox.pay(payment.reference, outcome="failed", send_webhook=False)
    time_passes(payment)

    assert payments_reconcile() == {"verify:failed": 1}

    payment = reload(payment)
    assert payment.status == "FAILED"
    claim = reload(payment.claim)
    assert claim.status == ClaimStatus.CLAIMED  # until its expiry: the buyer may try again
    assert held_tickets(claim) == 1


@pytest.mark.django_db
def test_pending_unpaid_backs_off_until_the_claim_is_over(api, sandbox, settings):
    payment = pending_payment(api)
    time_passes(payment)

    # The customer may still be on the checkout page: leave it, look later.
    assert payments_reconcile() == {"verify:in_progress": 1}
    payment = reload(payment)
    assert payment.status == "PENDING"
    assert payment.gateway_status == "abandoned"
    first_wait = payment.next_check_at - timezone.now()
    assert first_wait > timedelta(seconds=settings.PAYMENT_STALE_SECONDS * 2 - 5)
    assert reload(payment.claim).status == ClaimStatus.CLAIMED

    time_passes(payment)
    payments_reconcile()
    second_wait = reload(payment).next_check_at - timezone.now()
    assert second_wait > first_wait + timedelta(seconds=settings.PAYMENT_STALE_SECONDS)

    # Once the claim has expired, "abandoned" is final.
    type(payment.claim).objects.filter(pk=payment.claim_id).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    time_passes(payment)
    assert payments_reconcile() == {"verify:abandoned": 1}
    assert reload(payment).status == "FAILED"
    claims_expire()  # no payment in flight: the claim's own expiry releases it
    claim = reload(payment.claim)
    assert (claim.status, claim.release_reason) == (ClaimStatus.RELEASED, "expired")


@pytest.mark.django_db
def test_gateway_down_during_reconcile_backs_off(api, sandbox):
    payment = pending_payment(api)
    time_passes(payment)
    sandbox.config(fail_next_n_with_5xx=3)

    assert payments_reconcile() == {"gateway_unavailable": 1}

    payment = reload(payment)
    assert payment.status == "PENDING"
    assert payment.next_check_at > timezone.now()
    assert payment.events.filter(kind="verify_error").count() == 1


@pytest.mark.django_db
def test_money_of_the_wrong_amount_found_by_verify_goes_back(api, sandbox):
    """Its webhook was lost: reconciliation finds the wrong money, never
    confirms it, and asks for the refund in the same pass."""
    payment = pending_payment(api)
    sandbox.pay(payment.reference, send_webhook=False, amount=1)
    time_passes(payment)

    assert payments_reconcile() == {"verify:success": 1, "auto_refund:pending": 1}

    payment = reload(payment)
    assert (payment.status, payment.paid_amount) == ("REFUND_PENDING", 1)
    assert payment.flag_reason == "amount 1 != expected 500000"
    assert payment.events.filter(kind="state_change", to_status="CONFIRMED").count() == 0
    assert reload(payment.claim).status == ClaimStatus.CLAIMED  # its hold runs its course
    assert sandbox.stats()["refund_calls"] == 1


@pytest.mark.django_db(transaction=True)
def test_workers_skip_rows_another_worker_holds(api, sandbox):
    held = pending_payment(api)
    free = pending_payment(api)
    time_passes(held)
    time_passes(free)
    locked, release = threading.Event(), threading.Event()

    def other_worker() -> None:
        try:
            with transaction.atomic():
                Payment.objects.select_for_update().get(pk=held.pk)
                locked.set()
                release.wait(timeout=10)
        finally:
            connection.close()

    thread = threading.Thread(target=other_worker)
    thread.start()
    try:
        assert locked.wait(timeout=10)
        taken = payments_due(limit=10)  # must not wait for the other worker's lock
    finally:
        release.set()
        thread.join()
    assert taken == [free.pk]
    # Taken rows are leased: a second worker right after finds nothing due.
    assert payments_due(limit=10) == [held.pk]
    assert payments_due(limit=10) == []


@pytest.mark.django_db
def test_the_reconcile_task_is_single_flight(api, sandbox):
    payment = pending_payment(api)
    time_passes(payment)
    with task_lock("payments_reconcile", ttl_s=10) as held:
        assert held is not None
        assert tasks.payments_reconcile() == SKIPPED
        assert sandbox.stats()["verify_calls"] == 0
    assert tasks.payments_reconcile() == {"verify:in_progress": 1}


@pytest.mark.django_db
def test_stale_initializing_for_a_released_claim_is_not_sent_to_the_gateway(
    sandbox, fault_hooks
):
    payment = crashed_payment("payment.after_initializing")
    type(payment.claim).objects.filter(pk=payment.claim_id).update(status=ClaimStatus.RELEASED)
    time_passes(payment)

    assert payments_reconcile() == {"verify:not_found": 1}

    assert reload(payment).status == "FAILED"
    assert sandbox.stats()["initialize_calls"] == 0  # no transaction opened for nothing
    assert sandbox.stats()["verify_calls"] == 1
