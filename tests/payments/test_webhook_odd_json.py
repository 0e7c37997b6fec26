"""A correctly signed webhook whose JSON
Postgres cannot store or Python cannot use (``\\u0000``, ``Infinity``/``NaN``,
an integer too large for any amount) is a 400 that changes nothing, never a
500."""

from __future__ import annotations

import json

import pytest

from payments.models import Payment, PaymentEvent, WebhookReceipt
from payments.paystack import sign
from tests.support.payments import pending_payment, post_webhook

pytestmark = pytest.mark.django_db


def odd_body(reference: str, oddity: str) -> bytes:
    data = {"reference": reference, "amount": "AMOUNT", "currency": "NGN", "id": 1}
    text = json.dumps({"event": "charge.success", "data": data})
    amount = {"nul": '500000, "gateway_response": "ok\\u0000"', "infinity": "Infinity"}
    amount |= {"nan": "NaN", "huge": "9" * 40, "too_long_for_python": "9" * 5000}
    amount["nul in utf-16"] = amount["nul"]  # JSON may come in UTF-16: no "\u0000" byte run
    text = text.replace('"AMOUNT"', amount[oddity])
    return text.encode("utf-16") if oddity == "nul in utf-16" else text.encode()


ODDITIES = ["nul", "nul in utf-16", "infinity", "nan", "huge", "too_long_for_python"]


@pytest.mark.parametrize("oddity", ODDITIES)
def test_a_signed_webhook_with_unstorable_json_is_400_and_changes_nothing(
    api, client, sandbox, oddity
):
    payment = pending_payment(api)
    sandbox.pay(payment.reference, send_webhook=False)
    body = odd_body(payment.reference, oddity)
    events_before = PaymentEvent.objects.count()
    response = post_webhook(client, body, sign(body, sandbox.app.secret_key))
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "malformed_request"
    assert Payment.objects.get(pk=payment.pk).status == "PENDING"
    assert PaymentEvent.objects.count() == events_before
    assert WebhookReceipt.objects.count() == 0
