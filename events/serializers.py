"""The shapes of the events API: the catalogue (events and their tiers) and
a reserved tier's seat map."""

from __future__ import annotations

from rest_framework import serializers

from events.models import Event, TicketTier
from inventory.seating.domain import SeatStatus


class TierSerializer(serializers.ModelSerializer):
    available = serializers.SerializerMethodField(
        help_text="Approximate free tickets (from the Redis counters)."
    )

    class Meta:
        model = TicketTier
        fields = ["id", "name", "price", "inventory", "available", "kind"]

    def get_available(self, tier: TicketTier) -> int | None:
        return self.context.get("available", {}).get(str(tier.id))


class EventListSerializer(serializers.ModelSerializer):
    class Meta:
        model = Event
        fields = [
            "id",
            "name",
            "slug",
            "venue",
            "starts_at",
            "currency",
            "status",
            "sale_start",
            "sale_end",
            "prequeue_opens_at",
        ]


class EventDetailSerializer(serializers.ModelSerializer):
    tiers = TierSerializer(many=True, read_only=True)
    queue_length = serializers.SerializerMethodField()

    class Meta:
        model = Event
        fields = [
            "id",
            "name",
            "slug",
            "description",
            "venue",
            "starts_at",
            "currency",
            "status",
            "sale_start",
            "sale_end",
            "prequeue_opens_at",
            "max_tickets_per_customer",
            "admission_window_seconds",
            "tiers",
            "queue_length",
        ]

    def get_queue_length(self, event: Event) -> int | None:
        return self.context.get("queue_length")


class SeatSerializer(serializers.Serializer):
    """One seat (for the schema: the view answers the cached JSON itself).
    Fields from ``get_fields``: a field named ``label`` would shadow
    ``Field.label``."""

    def get_fields(self) -> dict[str, serializers.Field]:
        return {
            "label": serializers.CharField(help_text='"A-12"; unique in its tier.'),
            "section": serializers.CharField(),
            "row": serializers.CharField(),
            "number": serializers.IntegerField(),
            "x": serializers.FloatField(allow_null=True),
            "y": serializers.FloatField(allow_null=True, help_text="Grows away from the stage."),
            "status": serializers.ChoiceField(choices=[s.value for s in SeatStatus]),
            "accessible": serializers.BooleanField(),
            "restricted_view": serializers.BooleanField(),
        }


class SeatMapSerializer(serializers.Serializer):
    tier_id = serializers.UUIDField()
    version = serializers.IntegerField(
        help_text="Grows with every change; a live delta with a version at or below it is "
        "already in this map."
    )
    seats = SeatSerializer(many=True)
