from rest_framework import serializers

from queueing.serializers import POLL_AFTER_HELP

# --- the customer's own state (shapes for the schema; built in customer_state.py) ---


class MeQueueSerializer(serializers.Serializer):
    queue_entry_id = serializers.UUIDField(allow_null=True)
    joined_at = serializers.DateTimeField(allow_null=True)
    status = serializers.CharField(help_text="WAITING, ADMITTED, COMPLETED, ABANDONED or EXPIRED.")
    position = serializers.IntegerField(allow_null=True)
    eta_seconds = serializers.IntegerField(allow_null=True)
    served = serializers.IntegerField(allow_null=True)
    poll_after_seconds = serializers.IntegerField(allow_null=True, help_text=POLL_AFTER_HELP)
    admission_token = serializers.CharField(required=False, help_text="Only while ADMITTED.")
    admission_expires_at = serializers.DateTimeField(required=False)


class MeClaimSerializer(serializers.Serializer):
    claim_id = serializers.UUIDField()
    status = serializers.CharField(help_text="CLAIMED, CONFIRMED or RELEASED.")
    status_text = serializers.CharField(help_text="The status in plain words.")
    tier_id = serializers.UUIDField()
    tier_name = serializers.CharField()
    quantity = serializers.IntegerField()
    seats = serializers.ListField(
        child=serializers.CharField(),
        help_text='The seats held ("A-1") on a reserved tier; empty on general admission.',
    )
    amount = serializers.IntegerField(help_text="Minor units.")
    currency = serializers.CharField()
    expires_at = serializers.DateTimeField()
    release_reason = serializers.CharField(allow_null=True)
    release_text = serializers.CharField()


class MePaymentSerializer(serializers.Serializer):
    payment_id = serializers.UUIDField()
    status = serializers.CharField()
    status_text = serializers.CharField(help_text="The status in plain words.")
    reference = serializers.CharField()
    authorization_url = serializers.URLField(allow_null=True)
    amount = serializers.IntegerField()
    currency = serializers.CharField()


class IssuedTicketSerializer(serializers.Serializer):
    ticket_id = serializers.UUIDField()
    code = serializers.CharField(help_text="What the QR code holds and the door checks in.")
    status = serializers.CharField(
        help_text="valid, on_resale (returned, still yours until someone has paid for it), "
        "used (checked in), resold (someone else bought it: see refund), transferred (sent "
        "to someone else) or void (cancelled)."
    )
    status_text = serializers.CharField()
    event_id = serializers.UUIDField()
    tier_name = serializers.CharField()
    seat = serializers.IntegerField(help_text="1..quantity within the purchase.")
    seat_label = serializers.CharField(
        help_text='The seat on a reserved tier ("A-12"); empty on general admission.'
    )
    holder_email = serializers.EmailField()
    issued_at = serializers.DateTimeField()
    checked_in_at = serializers.DateTimeField(allow_null=True)
    url = serializers.CharField(help_text="The ticket's page (QR code, printable).")
    resale = serializers.DictField(
        allow_null=True,
        help_text="Its return while on_resale or resold: return_id, status, refund_amount, "
        "fee, currency.",
    )
    refund = serializers.DictField(
        allow_null=True,
        help_text="A resold ticket's refund: amount, currency, status (due, requested, "
        "pending, processed, failed), settled_at.",
    )
    transfer = serializers.DictField(
        allow_null=True, help_text="A transfer of it waiting to be accepted: transfer_id, to_email."
    )
    can_return = serializers.BooleanField()
    return_refusal = serializers.CharField(
        help_text="Why this valid ticket cannot be returned for resale (received by transfer, "
        "returns not offered or closed); empty when it can, or when it is not valid."
    )
    can_transfer = serializers.BooleanField()


class IssuedTicketWithEventSerializer(IssuedTicketSerializer):
    event_name = serializers.CharField()
    venue = serializers.CharField()
    starts_at = serializers.DateTimeField(allow_null=True)


class MeEventSerializer(serializers.Serializer):
    event_id = serializers.UUIDField()
    queue = MeQueueSerializer(allow_null=True)
    claim = MeClaimSerializer(allow_null=True)
    payment = MePaymentSerializer(allow_null=True)
    tickets = IssuedTicketSerializer(many=True)


class IncomingTransferSerializer(serializers.Serializer):
    transfer_id = serializers.UUIDField()
    from_email = serializers.EmailField()
    event_id = serializers.UUIDField()
    event_name = serializers.CharField()
    tier_name = serializers.CharField()
    seat_label = serializers.CharField()
    created_at = serializers.DateTimeField()


class MyTicketsSerializer(serializers.Serializer):
    results = IssuedTicketWithEventSerializer(many=True)
    incoming_transfers = IncomingTransferSerializer(
        many=True,
        help_text="Tickets sent to your address: accept with POST transfers/{id}/accept/.",
    )


class TransferAcceptedSerializer(serializers.Serializer):
    transfer_id = serializers.UUIDField()
    status = serializers.CharField()
    ticket = IssuedTicketWithEventSerializer()


class HoldSerializer(serializers.Serializer):
    claim_id = serializers.UUIDField()
    event_id = serializers.UUIDField()
    event_name = serializers.CharField()
    quantity = serializers.IntegerField()
    expires_at = serializers.DateTimeField(help_text="Pay before this, or the tickets go back.")
    paying = serializers.BooleanField(help_text="A payment is under way.")
    url = serializers.CharField(help_text="The event's waiting room, where the hold is paid.")


class MyHoldsSerializer(serializers.Serializer):
    results = HoldSerializer(many=True)
