"""Shapes of the payments REST interface."""

from typing import Any

from rest_framework import serializers

from fairqueue.api import StrictSerializer
from fairqueue.states import choices
from payments.domain import PaymentStatus


class PaymentCreateIn(StrictSerializer):
    """The body is empty: everything comes from the claim."""

    @classmethod
    def quick(cls, data: dict[str, Any]) -> dict[str, Any] | None:
        return {} if not data else None  # any field is unknown: the serializer says so


# The body is optional; when sent it is an empty JSON object. (drf-spectacular
# leaves a serializer without fields out of the schema, so it is spelt here.)
PAYMENT_CREATE_BODY = {
    "type": "object",
    "additionalProperties": False,
    "description": "Optional, and empty when sent: everything comes from the claim.",
}


class PaymentOut(serializers.Serializer):
    payment_id = serializers.UUIDField(source="id")
    claim_id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=choices(PaymentStatus))
    reference = serializers.CharField()
    authorization_url = serializers.SerializerMethodField()
    amount = serializers.IntegerField()
    currency = serializers.CharField()
    created_at = serializers.DateTimeField()

    def get_authorization_url(self, payment) -> str | None:
        return payment.authorization_url or None


_DATETIME = serializers.DateTimeField()


def payment_out(payment: Any) -> dict[str, Any]:
    """``PaymentOut``'s body, built by hand: every payment start answers it,
    and a serializer deep-copies its fields per instance."""
    return {
        "payment_id": str(payment.id),
        "claim_id": str(payment.claim_id),
        "status": payment.status,
        "reference": payment.reference,
        "authorization_url": payment.authorization_url or None,
        "amount": payment.amount,
        "currency": payment.currency,
        "created_at": _DATETIME.to_representation(payment.created_at),
    }
