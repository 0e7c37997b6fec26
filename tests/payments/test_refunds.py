"""Refunds through the gateway's Refund API (the sandbox's, over HTTP):
REFUND_REQUIRED is refunded without staff, staff refund one payment or a
selection (full or partial, with a reason), refund.* webhooks and
reconciliation move REFUND_PENDING to REFUNDED or REFUND_FAILED, and a
refunded CONFIRMED payment's tickets go back on sale."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from claims.domain import ClaimStatus
from claims.services import purchase_balance
from fairqueue.errors import InvalidInput, InvalidTransition
from fairqueue.redis import get_redis
from inventory.models import Ticket
from ledger.domain import Bucket
from payments.models import Payment, Refund
from payments.services import (
    payment_refund,
    payment_refund_auto,
    payments_reconcile,
    refundable_amount,
)
from tests.support.factories import TierFactory
from tests.support.payments import (
    held_tickets,
    kinds,
    make_claim,
    pending_payment,
    post_webhook,
    reload,
    transitions,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def gateway(sandbox):
    """Webhooks delivered by hand (the test client), refunds settled on demand."""
    sandbox.config(send_webhooks=False, refund_outcome="manual")
    return sandbox


def paid(api, client, gateway, claim=None) -> Payment:
    payment = pending_payment(api, claim)
    gateway.pay(payment.reference)
    body, signature = gateway.webhook(payment.reference)
    assert post_webhook(client, body, signature).json() == {"status": "processed"}
    return reload(payment)


def refund_required(api, client, gateway) -> Payment:
    """Paid after its tickets went to someone else (invariant 5)."""
    tier = TierFactory(inventory=1)
    claim = make_claim(tier=tier)
    payment = pending_payment(api, claim)
    type(claim).objects.filter(pk=claim.pk).update(status="RELEASED")
    Ticket.objects.filter(claim=claim).update(claim=None)
    make_claim(tier=tier)  # the last ticket goes to another customer
    payment = _late_success(client, gateway, payment)
    assert payment.status == "REFUND_REQUIRED"
    return payment


def _late_success(client, gateway, payment: Payment) -> Payment:
    gateway.pay(payment.reference)
    body, signature = gateway.webhook(payment.reference)
    post_webhook(client, body, signature)
    return reload(payment)


def settle(client, gateway, payment: Payment, outcome: str) -> None:
    """The gateway settles the refund, and its webhook arrives."""
    [refund] = [r for r in gateway.refunds_of(payment.reference) if r["status"] == "pending"]
    gateway.settle_refund(str(refund["id"]), outcome)
    body, signature = gateway.refund_webhook(refund["id"])
    assert post_webhook(client, body, signature).json() == {"status": "processed"}


def test_refund_required_is_refunded_by_reconciliation_without_staff(api, client, gateway):
    payment = refund_required(api, client, gateway)

    report = payments_reconcile()

    assert report == {"auto_refund:pending": 1}
    payment = reload(payment)
    assert payment.status == "REFUND_PENDING"
    [asked] = gateway.refunds_of(payment.reference)
    assert asked["amount"] == payment.amount  # everything that was taken
    assert "FairQueue refund" in asked["merchant_note"]
    refund = Refund.objects.get(payment=payment)
    assert (refund.status, refund.requested_by, refund.gateway_refund_id) == (
        "PENDING",
        "auto",
        str(asked["id"]),
    )

    settle(client, gateway, payment, "processed")

    payment = reload(payment)
    assert payment.status == "REFUNDED"
    assert payment.refunded_amount == payment.amount
    assert transitions(payment)[-2:] == [
        ("REFUND_REQUIRED", "REFUND_PENDING"),
        ("REFUND_PENDING", "REFUNDED"),
    ]
    assert kinds(payment).count("refund_requested") == 1
    assert gateway.stats()["refund_calls"] == 1
    assert payments_reconcile() == {}  # nothing left to do: no second refund


def test_the_automatic_refund_is_enqueued_when_the_payment_needs_it(
    api, client, gateway, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        payment = refund_required(api, client, gateway)

    queued = get_redis().lrange("celery", 0, -1)
    assert len(queued) == 1
    assert "payments.tasks.payment_refund_auto" in queued[0]
    assert str(payment.pk) in queued[0]
    # What the worker runs, once (a second run finds nothing to do).
    assert payment_refund_auto(payment_id=payment.pk) == "refund:pending"
    assert payment_refund_auto(payment_id=payment.pk) == "skipped"
    assert gateway.stats()["refund_calls"] == 1


def test_automatic_refunds_can_be_switched_off(api, client, gateway, settings):
    settings.PAYSTACK_AUTO_REFUND = False
    payment = refund_required(api, client, gateway)

    assert payments_reconcile() == {}
    assert payment_refund_auto(payment_id=payment.pk) == "off"

    assert reload(payment).status == "REFUND_REQUIRED"
    assert gateway.stats()["refund_calls"] == 0


def test_refunding_a_confirmed_payment_puts_its_tickets_back_on_sale(
    api, client, gateway, django_capture_on_commit_callbacks
):
    tier = TierFactory(inventory=3)
    claim = make_claim(tier=tier, quantity=2)
    payment = paid(api, client, gateway, claim)
    assert reload(claim).status == ClaimStatus.CONFIRMED
    assert claim.issued_tickets.filter(status="VALID").count() == 2

    with django_capture_on_commit_callbacks(execute=True):
        refund = payment_refund(payment_id=payment.pk, actor="staff:ada", reason="event moved")

    assert refund.status == "PENDING"
    claim = reload(claim)
    assert (claim.status, claim.release_reason) == (ClaimStatus.RELEASED, "refunded")
    assert held_tickets(claim) == 0
    assert Ticket.objects.filter(tier=tier, claim__isnull=True).count() == 3
    # The tickets issued for the purchase no longer get anyone in.
    assert sorted(claim.issued_tickets.values_list("status", flat=True)) == ["VOID", "VOID"]
    assert reload(payment).status == "REFUND_PENDING"
    settle(client, gateway, payment, "processed")
    assert reload(payment).status == "REFUNDED"
    assert reload(claim).status == ClaimStatus.RELEASED  # and stays so


def test_partial_refund_asks_for_that_amount(api, client, gateway):
    payment = paid(api, client, gateway)

    refund = payment_refund(
        payment_id=payment.pk, actor="staff:ada", reason="goodwill", amount=150_000
    )

    assert (refund.amount, refund.full) == (150_000, False)
    [asked] = gateway.refunds_of(payment.reference)
    assert asked["amount"] == 150_000
    settle(client, gateway, payment, "processed")
    payment = reload(payment)
    assert payment.status == "REFUNDED"
    assert payment.refunded_amount == 150_000
    # The purchase was cancelled: the rest is kept as a cancellation fee.
    assert refundable_amount(payment) == 0
    assert purchase_balance(reload(payment.claim))[Bucket.FEE] == payment.amount - 150_000


@pytest.mark.parametrize("amount", [0, -5, 500_001])
def test_a_wrong_amount_is_refused_and_changes_nothing(api, client, gateway, amount):
    payment = paid(api, client, gateway)

    with pytest.raises(InvalidInput):
        payment_refund(payment_id=payment.pk, actor="staff:ada", reason="x", amount=amount)

    assert reload(payment).status == "CONFIRMED"
    assert reload(payment.claim).status == ClaimStatus.CONFIRMED
    assert Refund.objects.count() == 0
    assert gateway.stats()["refund_calls"] == 0


def test_a_live_payment_cannot_be_refunded(api, gateway):
    payment = pending_payment(api)
    with pytest.raises(InvalidTransition):
        payment_refund(payment_id=payment.pk, actor="staff:ada", reason="x")
    assert reload(payment).status == "PENDING"
    assert Refund.objects.count() == 0


def test_failed_refund_then_a_retry_that_succeeds(api, client, gateway, caplog):
    payment = refund_required(api, client, gateway)
    payments_reconcile()

    settle(client, gateway, payment, "failed")

    payment = reload(payment)
    assert payment.status == "REFUND_FAILED"
    first = Refund.objects.get(payment=payment)
    assert first.status == "FAILED"
    assert "refund of payment" in caplog.text  # staff alerted (ERROR)
    assert payments_reconcile() == {}  # a failed refund is not retried blindly

    second = payment_refund(payment_id=payment.pk, actor="staff:ada", reason="try again")
    settle(client, gateway, payment, "processed")

    assert reload(second).status == "PROCESSED"
    payment = reload(payment)
    assert payment.status == "REFUNDED"
    assert payment.refunded_amount == payment.amount
    assert transitions(payment)[-3:] == [
        ("REFUND_PENDING", "REFUND_FAILED"),
        ("REFUND_FAILED", "REFUND_PENDING"),
        ("REFUND_PENDING", "REFUNDED"),
    ]


def test_the_same_refund_webhook_twice_refunds_once(api, client, gateway):
    payment = paid(api, client, gateway)
    payment_refund(payment_id=payment.pk, actor="staff:ada", reason="x")
    [refund] = gateway.refunds_of(payment.reference)
    gateway.settle_refund(str(refund["id"]), "processed")
    body, signature = gateway.refund_webhook(refund["id"])

    first = post_webhook(client, body, signature)
    again = post_webhook(client, body, signature)

    assert (first.json(), again.json()) == ({"status": "processed"}, {"status": "duplicate"})
    payment = reload(payment)
    assert payment.refunded_amount == payment.amount  # not twice
    assert transitions(payment).count(("REFUND_PENDING", "REFUNDED")) == 1


def test_reconciliation_finds_a_refund_whose_webhook_was_lost(api, client, gateway):
    payment = paid(api, client, gateway)
    refund = payment_refund(payment_id=payment.pk, actor="staff:ada", reason="x")
    gateway.settle_refund(refund.gateway_refund_id, "processed")  # its webhook never arrives
    assert payments_reconcile() == {}  # not due yet
    Refund.objects.filter(pk=refund.pk).update(next_check_at=timezone.now())

    assert payments_reconcile() == {"refund_check:processed": 1}

    assert reload(refund).status == "PROCESSED"
    assert reload(payment).status == "REFUNDED"


def test_a_refund_request_that_never_arrived_is_sent_by_reconciliation(api, client, gateway):
    payment = paid(api, client, gateway)
    gateway.config(fail_next_n_with_5xx=3)  # every attempt of the first call

    refund = payment_refund(payment_id=payment.pk, actor="staff:ada", reason="x")

    assert refund.status == "REQUESTED"
    assert reload(payment).status == "REFUND_PENDING"
    assert gateway.refunds_of(payment.reference) == []
    assert kinds(payment).count("refund_error") == 1
    Refund.objects.filter(pk=refund.pk).update(next_check_at=timezone.now())

    assert payments_reconcile() == {"refund_send:pending": 1}

    assert len(gateway.refunds_of(payment.reference)) == 1
    assert reload(refund).status == "PENDING"


def test_a_refund_whose_answer_was_lost_is_found_not_sent_twice(api, client, gateway):
    payment = paid(api, client, gateway)
    refund = payment_refund(payment_id=payment.pk, actor="staff:ada", reason="x")
    # As if the gateway's answer had been lost: we know no id, it has the refund.
    Refund.objects.filter(pk=refund.pk).update(
        status="REQUESTED",
        gateway_refund_id="",
        next_check_at=timezone.now() - timedelta(seconds=1),
    )

    assert payments_reconcile() == {"refund_check:pending": 1}

    assert gateway.stats()["refund_calls"] == 1  # not asked again
    refund = reload(refund)
    assert refund.status == "PENDING"
    assert refund.gateway_refund_id == str(gateway.refunds_of(payment.reference)[0]["id"])


def test_a_gateway_refusal_marks_the_refund_failed(api, client, gateway):
    payment = paid(api, client, gateway)
    # Refunded in the gateway's dashboard, its news not here yet: the
    # gateway refuses ours.
    made = gateway.dashboard_refund(payment.reference)
    gateway.settle_refund(str(made["id"]), "processed")

    refund = payment_refund(payment_id=payment.pk, actor="staff:ada", reason="again")

    assert refund.status == "FAILED"
    assert "fully reversed" in refund.failure_reason
    assert reload(payment).status == "REFUND_FAILED"
    assert gateway.stats()["refund_calls"] == 2  # the dashboard's, then ours


def test_refund_webhooks_out_of_order_end_refunded(api, client, gateway):
    payment = paid(api, client, gateway)
    payment_refund(payment_id=payment.pk, actor="staff:ada", reason="x")
    [refund] = gateway.refunds_of(payment.reference)
    pending = gateway.refund_webhook(refund["id"])
    gateway.settle_refund(str(refund["id"]), "processed")
    processed = gateway.refund_webhook(refund["id"])

    assert post_webhook(client, *processed).json() == {"status": "processed"}
    assert post_webhook(client, *pending).json() == {"status": "processed"}  # late: no effect

    payment = reload(payment)
    assert payment.status == "REFUNDED"
    assert payment.refunded_amount == payment.amount
    assert reload(payment.refunds.get()).status == "PROCESSED"
    assert transitions(payment)[-1] == ("REFUND_PENDING", "REFUNDED")
