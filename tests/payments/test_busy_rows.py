"""Payments meeting a row another transaction holds: every wait is bounded
by the lock timeout and answered "busy, retry" (Busy; 503 with Retry-After
over HTTP, the webhook too, so the gateway delivers again), and nothing is
written."""

from __future__ import annotations

import json

import pytest
from django.conf import settings as django_settings

from claims.models import Claim
from fairqueue.errors import Busy
from payments.models import Payment, PaymentEvent, Refund, WebhookReceipt
from payments.paystack import sign
from payments.services import payment_mark_refunded, payment_refund_by_staff
from tests.support.payments import payment_row, pending_payment, post_webhook, reload
from tests.support.races import rows_locked

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def short_lock_timeout(settings):
    settings.DB_LOCK_TIMEOUT_MS = 200


def written(payment: Payment) -> tuple:
    payment = reload(payment)
    return (
        payment.status,
        payment.dispute,
        payment.refunded_amount,
        Claim.objects.get(pk=payment.claim_id).status,
        PaymentEvent.objects.filter(payment=payment).count(),
        Refund.objects.filter(payment=payment).count(),
        WebhookReceipt.objects.count(),
    )


def test_refunding_a_paid_payment_whose_claim_is_busy_is_busy_and_writes_nothing():
    payment = payment_row(reference="busy-claim-refund", amount=5000, status="CONFIRMED")
    before = written(payment)
    with rows_locked(Claim.objects.filter(pk=payment.claim_id)), pytest.raises(Busy):
        payment_refund_by_staff(payment_id=payment.pk, actor="staff:ada", reason="cancelled")
    assert written(payment) == before


def test_marking_a_lost_dispute_refunded_while_its_claim_is_busy_is_busy_and_writes_nothing():
    payment = payment_row(reference="busy-claim-dispute", amount=5000, status="CONFIRMED")
    Payment.objects.filter(pk=payment.pk).update(dispute="lost")
    before = written(payment)
    with rows_locked(Claim.objects.filter(pk=payment.claim_id)), pytest.raises(Busy):
        payment_mark_refunded(payment_id=payment.pk, actor="staff:ada")
    assert written(payment) == before


def busy_answer(response) -> tuple:
    return response.status_code, response.get("Retry-After"), response.json()["error"]["code"]


def test_a_webhook_that_meets_a_busy_payment_row_is_503_with_retry_after(api, client, sandbox):
    payment = pending_payment(api)
    sandbox.pay(payment.reference, send_webhook=False)
    body, signature = sandbox.webhook(payment.reference)
    before = written(payment)

    with rows_locked(Payment.objects.filter(pk=payment.pk)):
        response = post_webhook(client, body, signature)

    assert busy_answer(response) == (503, "1", "busy")
    assert written(payment) == before
    # The gateway delivers it again: now it is processed.
    assert post_webhook(client, body, signature).json() == {"status": "processed"}
    assert reload(payment).status == "CONFIRMED"


def test_a_refund_webhook_that_meets_a_busy_refund_row_is_503_with_retry_after(client):
    payment = payment_row(reference="busy-refund-row", amount=5000, status="REFUND_PENDING")
    refund = Refund.objects.create(
        payment=payment, amount=5000, currency="NGN", requested_by="auto",
        gateway_refund_id="9001", status="PENDING", next_check_at=payment.created_at,
    )  # fmt: skip
    body = json.dumps(
        {
            "event": "refund.processed",
            "data": {"id": 9001, "amount": 5000, "transaction_reference": payment.reference},
        }
    ).encode()
    signature = sign(body, django_settings.PAYSTACK_SECRET_KEY)
    before = written(payment)

    with rows_locked(Refund.objects.filter(pk=refund.pk)):
        response = post_webhook(client, body, signature)

    assert busy_answer(response) == (503, "1", "busy")
    assert written(payment) == before
    assert reload(refund).status == "PENDING"
