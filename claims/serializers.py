import dataclasses
import uuid
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from claims.domain import ReleaseReason
from claims.models import Claim
from claims.services import face_value
from customers.serializers import MailboxField
from fairqueue.api import StrictSerializer
from fairqueue.states import choices
from ledger.selectors import account_money, account_refunds

_QUICK_KEYS = {"admission_token", "tier_id", "quantity"}


class ClaimCreateSerializer(StrictSerializer):
    admission_token = serializers.CharField(max_length=4096, trim_whitespace=True)
    tier_id = serializers.UUIDField()
    # Range checked by the service against the event's max_tickets_per_customer.
    quantity = serializers.IntegerField(
        required=False,
        help_text="How many tickets. On a reserved tier without seats: the best available.",
    )
    seats = serializers.ListField(
        child=serializers.CharField(max_length=48),
        required=False,
        max_length=100,
        help_text='A reserved tier\'s seats by label (["A-1", "A-2"]), instead of quantity: '
        "all or nothing.",
    )

    @classmethod
    def quick(cls, data: dict[str, Any]) -> dict[str, Any] | None:
        """A general admission claim: exactly a token, a tier and a quantity."""
        if data.keys() != _QUICK_KEYS:
            return None
        token, tier, quantity = data["admission_token"], data["tier_id"], data["quantity"]
        if type(token) is not str or type(tier) is not str or type(quantity) is not int:
            return None
        # Printable ASCII: no NUL, no surrogate, no whitespace but spaces.
        if not (0 < len(token) <= 4096 and token.isascii() and token.isprintable()):
            return None
        if token.strip() != token:
            return None
        try:
            tier_id = uuid.UUID(hex=tier)
        except ValueError:
            return None
        return {"admission_token": token, "tier_id": tier_id, "quantity": quantity}

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "quantity" not in attrs and "seats" not in attrs:
            raise serializers.ValidationError({"quantity": "Give a quantity or seats."})
        if "quantity" in attrs and "seats" in attrs and attrs["quantity"] != len(attrs["seats"]):
            raise serializers.ValidationError(
                {"quantity": "Give seats or a quantity; with both, they must agree."}
            )
        return attrs


_DATETIME = serializers.DateTimeField()


def claim_created_payload(claim: Claim) -> dict[str, Any]:
    """The 201 body of a new claim (``ClaimSerializer``'s shape, built by hand:
    the claim's hot path does not pay for a ModelSerializer per request)."""
    return {
        "claim_id": str(claim.id),
        "status": claim.status,
        "tier_id": str(claim.tier_id),
        "quantity": claim.quantity,
        "seats": list(claim.seats),
        "amount": claim.amount,
        "currency": claim.currency,
        "expires_at": _DATETIME.to_representation(claim.expires_at),
    }


class ClaimSerializer(serializers.ModelSerializer):
    claim_id = serializers.UUIDField(source="id", read_only=True)
    tier_id = serializers.UUIDField(read_only=True)
    seats = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        help_text="The seats' labels on a reserved tier; empty on general admission.",
    )

    class Meta:
        model = Claim
        fields = [
            "claim_id",
            "status",
            "tier_id",
            "quantity",
            "seats",
            "amount",
            "currency",
            "expires_at",
        ]
        read_only_fields = fields


class ReleaseReasonField(serializers.ChoiceField):
    """The model keeps "" for a claim that is not released; the API says null."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=choices(ReleaseReason), allow_null=True, **kwargs)

    def to_representation(self, value: str) -> str | None:  # type: ignore[override]  # null, not ""
        return value or None


class MoneySerializer(serializers.Serializer):
    """The purchase's account in short, in minor units of ``currency``."""

    currency = serializers.CharField()
    paid = serializers.IntegerField(help_text="What the gateway took.")
    refunded = serializers.IntegerField(help_text="What went back to the buyer.")
    refund_pending = serializers.IntegerField(help_text="Asked of the gateway, not settled yet.")
    fee_kept = serializers.IntegerField(
        help_text="Kept by the organizer (a return fee, a cancellation fee)."
    )


class RefundLineSerializer(serializers.Serializer):
    amount = serializers.IntegerField(help_text="Minor units.")
    status = serializers.ChoiceField(
        choices=[("pending", "Pending"), ("processed", "Processed"), ("failed", "Failed")]
    )
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()


class ClaimDetailSerializer(ClaimSerializer):
    event_id = serializers.UUIDField(read_only=True)
    release_reason = ReleaseReasonField(
        read_only=True, help_text="Why the claim was released; null while it is not."
    )
    money = serializers.SerializerMethodField()
    refunds = serializers.SerializerMethodField()

    class Meta(ClaimSerializer.Meta):
        fields = [
            *ClaimSerializer.Meta.fields,
            "event_id",
            "created_at",
            "confirmed_at",
            "released_at",
            "release_reason",
            "money",
            "refunds",
        ]
        read_only_fields = fields

    @extend_schema_field(MoneySerializer)
    def get_money(self, claim: Claim) -> dict[str, Any]:
        money = account_money(claim_id=claim.pk, face=face_value(claim))
        return {"currency": claim.currency, **dataclasses.asdict(money)}

    @extend_schema_field(RefundLineSerializer(many=True))
    def get_refunds(self, claim: Claim) -> Any:
        return RefundLineSerializer(account_refunds(claim_id=claim.pk), many=True).data


class CheckInSerializer(StrictSerializer):
    code = serializers.CharField(
        max_length=64,
        help_text="The ticket's code, as its QR holds it or as typed (dashes optional).",
    )


class CheckedInSerializer(serializers.Serializer):
    result = serializers.ChoiceField(choices=[("checked_in", "Checked in")])
    code = serializers.CharField()
    tier = serializers.CharField()
    seat = serializers.IntegerField()
    seat_label = serializers.CharField(help_text="The seat on a reserved tier; empty otherwise.")
    holder_email = serializers.EmailField()
    checked_in_at = serializers.DateTimeField()


class TicketReturnSerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=[("on_resale", "On resale")],
        help_text="on_resale: the ticket is back on sale and still yours until someone has "
        "paid for it.",
    )
    return_id = serializers.UUIDField()
    code = serializers.CharField()
    refund_amount = serializers.IntegerField(
        help_text="Minor units you get back once it is resold: face value minus the fee."
    )
    fee = serializers.IntegerField(help_text="Minor units the organizer keeps.")
    currency = serializers.CharField()


class ReturnQuoteSerializer(serializers.Serializer):
    face_value = serializers.IntegerField()
    fee = serializers.IntegerField()
    refund_amount = serializers.IntegerField()
    currency = serializers.CharField()
    returns_until = serializers.DateTimeField(allow_null=True)


class TransferCreateSerializer(StrictSerializer):
    # The recipient's mailbox, by sign-in's rules: they accept signed in with it.
    email = MailboxField(max_length=254)


class TransferSerializer(serializers.Serializer):
    transfer_id = serializers.UUIDField()
    status = serializers.CharField(help_text="pending, accepted or cancelled.")
    code = serializers.CharField(help_text="The ticket being sent.")
    to_email = serializers.EmailField()
    event_id = serializers.UUIDField()
    created_at = serializers.DateTimeField()


class TransferAcceptedSerializer(serializers.Serializer):
    transfer_id = serializers.UUIDField()
    status = serializers.CharField()
    ticket = serializers.DictField(help_text="Your new ticket (as in GET me/tickets/).")
