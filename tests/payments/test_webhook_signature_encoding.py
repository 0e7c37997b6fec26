"""A signature header that is not ASCII is a bad signature (400), not a 500."""

import pytest
from django.test import Client

from payments.models import PaymentEvent, WebhookReceipt
from tests.support.payments import WEBHOOK_PATH

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("signature", ["é" * 128, "abc\u00ff", "\u00e9"])
def test_a_non_ascii_signature_is_400_and_changes_nothing(signature):
    body = b'{"event":"charge.success","data":{"reference":"fq_x"}}'
    # The WSGI environ carries header bytes as latin-1 text, as a server would.
    raw = signature.encode("utf-8").decode("latin-1")

    response = Client().generic(
        "POST",
        WEBHOOK_PATH,
        data=body,
        content_type="application/json",
        HTTP_X_PAYSTACK_SIGNATURE=raw,
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_signature"
    assert WebhookReceipt.objects.count() == 0
    assert PaymentEvent.objects.count() == 0
