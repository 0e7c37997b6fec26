from rest_framework import serializers

from events.models import Event, TicketTier


class TierSerializer(serializers.ModelSerializer):
    available = serializers.SerializerMethodField(
        help_text="Approximate free tickets (from the Redis counters)."
    )

    class Meta:
        model = TicketTier
        fields = ["id", "name", "price", "inventory", "available"]

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
