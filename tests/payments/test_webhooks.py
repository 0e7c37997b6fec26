"""POST /webhooks/paystack/: signature first, then one short transaction;
the webhooks are the sandbox's own (body and signature), delivered by the
test client."""

import json

import pytest
from django.test import Client

from claims.domain import ClaimStatus
from payments.models import Payment, PaymentEvent, WebhookReceipt
from payments.paystack import sign
from tests.support.payments import (
    held_tickets,
    kinds,
    make_claim,
    pending_payment,
    post_webhook,
    reload,
    transitions,
)
from tests.support.races import race


def snapshot():
    return (
        list(Payment.objects.order_by("id").values_list("id", "status", "flag_reason")),
        PaymentEvent.objects.count(),
        WebhookReceipt.objects.count(),
        sorted(
            (str(c.pk), c.status)
            for c in Payment.objects.select_related("claim").all()
            for c in [c.claim]
        ),
    )


@pytest.mark.django_db
def test_charge_success_confirms_payment_and_claim(api, client, sandbox):
    payment = pending_payment(api)
    sandbox.pay(payment.reference, send_webhook=False)
    body, signature = sandbox.webhook(payment.reference)

    response = post_webhook(client, body, signature)

    assert response.status_code == 200
    assert response.json() == {"status": "processed"}
    payment = reload(payment)
    assert payment.status == "CONFIRMED"
    assert payment.confirmed_at is not None
    assert (payment.paid_amount, payment.paid_currency) == (payment.amount, "NGN")
    assert payment.gateway_transaction_id == str(sandbox.transaction(payment.reference)["id"])
    claim = reload(payment.claim)
    assert claim.status == ClaimStatus.CONFIRMED
    assert held_tickets(claim) == 1
    assert kinds(payment)[-2:] == ["webhook_received", "state_change"]
    assert transitions(payment)[-1] == ("PENDING", "CONFIRMED")
    received = payment.events.get(kind="webhook_received")
    assert received.raw_body == body.decode()  # kept exactly as received
    assert received.data["event"] == "charge.success"
    assert WebhookReceipt.objects.filter(reference=payment.reference).count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "signature",
    [None, "", "deadbeef", "x" * 128, "wrong-key"],
)
def test_bad_signature_changes_nothing(api, client, sandbox, signature):
    payment = pending_payment(api)
    sandbox.pay(payment.reference, send_webhook=False)
    body, _ = sandbox.webhook(payment.reference)
    if signature == "wrong-key":
        signature = sign(body, "sk_test_someone_else")
    before = snapshot()

    response = post_webhook(client, body, signature)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_signature"
    assert snapshot() == before
    assert reload(payment).status == "PENDING"
    assert reload(payment.claim).status == ClaimStatus.CLAIMED


@pytest.mark.django_db
def test_tampered_body_is_refused(api, client, sandbox):
    payment = pending_payment(api)
    sandbox.pay(payment.reference, send_webhook=False)
    body, signature = sandbox.webhook(payment.reference)
    tampered = body.replace(b'"success"', b'"success" ', 1)
    before = snapshot()
    assert post_webhook(client, tampered, signature).status_code == 400
    assert snapshot() == before


@pytest.mark.django_db
def test_same_webhook_again_is_already_processed(api, client, sandbox):
    payment = pending_payment(api)
    sandbox.pay(payment.reference, send_webhook=False)
    body, signature = sandbox.webhook(payment.reference)
    assert post_webhook(client, body, signature).json() == {"status": "processed"}
    events_after_first = PaymentEvent.objects.count()

    again = post_webhook(client, body, signature)

    assert again.status_code == 200
    assert again.json() == {"status": "duplicate"}
    assert PaymentEvent.objects.count() == events_after_first + 1
    logged = PaymentEvent.objects.order_by("-id").first()
    assert (logged.kind, logged.payment_id) == ("webhook_duplicate", payment.id)
    assert logged.from_status == logged.to_status == ""
    assert reload(payment).status == "CONFIRMED"


@pytest.mark.django_db(transaction=True)
def test_same_webhook_ten_times_in_parallel_confirms_once(api, sandbox):
    payment = pending_payment(api)
    sandbox.pay(payment.reference, send_webhook=False)
    body, signature = sandbox.webhook(payment.reference)

    answers = race(lambda _: post_webhook(Client(), body, signature), list(range(10)))

    assert all(not isinstance(a, Exception) for a in answers), answers
    assert sorted(a.status_code for a in answers) == [200] * 10
    outcomes = sorted(a.json()["status"] for a in answers)
    assert outcomes == ["duplicate"] * 9 + ["processed"]
    payment = reload(payment)
    assert payment.status == "CONFIRMED"
    assert transitions(payment) == [("INITIALIZING", "PENDING"), ("PENDING", "CONFIRMED")]
    assert payment.events.filter(kind="webhook_received").count() == 1
    assert payment.events.filter(kind="webhook_duplicate").count() == 9
    assert WebhookReceipt.objects.count() == 1
    assert reload(payment.claim).status == ClaimStatus.CONFIRMED


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("override", "expected_in_reason"),
    [
        ({"amount": 100}, "amount 100 != expected 500000"),
        ({"currency": "USD"}, "currency 'USD'"),
    ],
)
def test_amount_or_currency_mismatch_is_flagged_not_confirmed(
    api, client, sandbox, override, expected_in_reason
):
    payment = pending_payment(api)
    sandbox.pay(payment.reference, send_webhook=False, **override)
    body, signature = sandbox.webhook(payment.reference)

    response = post_webhook(client, body, signature)

    assert response.status_code == 200
    payment = reload(payment)
    assert payment.status == "REFUND_REQUIRED"  # never confirmed: the money goes back
    assert expected_in_reason in payment.flag_reason
    assert payment.paid_currency == override.get("currency", "NGN")
    assert reload(payment.claim).status == ClaimStatus.CLAIMED
    assert kinds(payment)[-3:] == ["webhook_received", "flagged", "state_change"]
    assert payment.events.filter(kind="state_change", to_status="CONFIRMED").count() == 0


@pytest.mark.django_db
def test_a_charge_failed_body_changes_nothing(api, client, sandbox):
    """Paystack sends no webhook for a failed charge (declines are found by
    verify): a signed ``charge.failed`` is acknowledged as an unknown event,
    and the payment and claim stay as they were."""
    claim = make_claim(quantity=2)
    payment = pending_payment(api, claim)
    body = json.dumps(
        {"event": "charge.failed", "data": {"reference": payment.reference, "status": "failed"}}
    ).encode()
    before = snapshot()

    response = post_webhook(client, body, sign(body, sandbox.app.secret_key))

    assert response.status_code == 200
    assert response.json() == {"status": "ignored"}
    assert snapshot() == before
    assert reload(payment).status == "PENDING"
    assert reload(claim).status == ClaimStatus.CLAIMED
    assert held_tickets(claim) == 2


@pytest.mark.django_db
def test_unknown_event_type_is_acknowledged_and_ignored(api, client, sandbox, caplog):
    payment = pending_payment(api)
    body = json.dumps(
        {"event": "transfer.success", "data": {"reference": payment.reference}}
    ).encode()
    before = snapshot()
    response = post_webhook(client, body, sign(body, sandbox.app.secret_key))
    assert response.status_code == 200
    assert response.json() == {"status": "ignored"}
    assert snapshot() == before
    assert "transfer.success" in caplog.text


@pytest.mark.django_db
def test_unknown_reference_is_acknowledged(api, client, sandbox, caplog):
    body = json.dumps(
        {"event": "charge.success", "data": {"reference": "not-ours", "amount": 1}}
    ).encode()
    response = post_webhook(client, body, sign(body, sandbox.app.secret_key))
    assert response.status_code == 200
    assert response.json() == {"status": "unknown_reference"}
    assert WebhookReceipt.objects.count() == 0
    assert "not-ours" in caplog.text


@pytest.mark.django_db
@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b""])
def test_signed_garbage_is_400_and_changes_nothing(api, client, sandbox, body):
    pending_payment(api)
    before = snapshot()
    response = post_webhook(client, body, sign(body, sandbox.app.secret_key))
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_request"
    assert snapshot() == before


@pytest.mark.django_db
def test_webhook_only_accepts_post(client):
    assert client.get("/api/v1/webhooks/paystack/").status_code == 405
    assert client.get("/api/v1/webhooks/paystack").status_code == 405


@pytest.mark.django_db
def test_webhook_url_without_the_slash_is_served_not_redirected(api, client, sandbox):
    payment = pending_payment(api)
    sandbox.pay(payment.reference, send_webhook=False)
    body, signature = sandbox.webhook(payment.reference)

    response = client.generic(
        "POST",
        "/api/v1/webhooks/paystack",
        data=body,
        content_type="application/json",
        HTTP_X_PAYSTACK_SIGNATURE=signature,
    )

    assert response.status_code == 200  # no 301/308: the POST is handled where it lands
    assert response.json() == {"status": "processed"}
    assert reload(payment).status == "CONFIRMED"
    assert reload(payment.claim).status == ClaimStatus.CONFIRMED
