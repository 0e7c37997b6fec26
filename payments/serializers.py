"""Shapes of the payments REST interface."""

from rest_framework import serializers

from fairqueue.api import StrictSerializer


class PaymentCreateIn(StrictSerializer):
    """The body is empty: everything comes from the claim."""


class PaymentOut(serializers.Serializer):
    payment_id = serializers.UUIDField(source="id")
    claim_id = serializers.UUIDField()
    status = serializers.CharField()
    reference = serializers.CharField()
    authorization_url = serializers.SerializerMethodField()
    amount = serializers.IntegerField()
    currency = serializers.CharField()
    created_at = serializers.DateTimeField()

    def get_authorization_url(self, payment) -> str | None:
        return payment.authorization_url or None
