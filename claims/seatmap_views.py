"""The seat map of a reserved tier, for customers (and the seat-map page)."""

from __future__ import annotations

from django.http import HttpResponse
from django.utils.cache import patch_vary_headers
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.views import APIView

from claims.domain import ClaimStatus
from claims.selectors import tier_snapshot
from events.domain import EventStatus
from fairqueue.errors import ErrorCode, NotFound
from fairqueue.schema import error
from inventory.seating.domain import SeatStatus
from inventory.seating.seatmap import seat_map_read


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


class TierSeatMapView(APIView):
    @extend_schema(
        operation_id="tier_seat_map",
        summary="Every seat of a reserved tier with its status",
        responses={
            200: SeatMapSerializer,
            404: error(
                "event_not_found; tier_not_found (no such tier of the event, or a general "
                "admission tier: it has no seats)."
            ),
        },
    )
    def get(self, request: Request, event_id: str, tier_id: str) -> HttpResponse:
        # The tier comes from the per-process snapshot cache: under load the
        # only shared read of a call is the one Redis round trip of the map.
        tier = tier_snapshot(tier_id=tier_id)
        if tier is None or str(tier.event_id) != str(event_id):
            raise NotFound("No such ticket tier for this event.", code=ErrorCode.TIER_NOT_FOUND)
        if tier.event_status == EventStatus.DRAFT:
            raise NotFound("No such event.", code=ErrorCode.EVENT_NOT_FOUND)
        if not tier.reserved:
            raise NotFound(
                "This tier is general admission: it has no seat map.",
                code=ErrorCode.TIER_NOT_FOUND,
                details={"kind": tier.kind},
            )
        body = seat_map_read(
            event_id=tier.event_id, tier_id=tier.id, sold_claim_status=ClaimStatus.CONFIRMED
        )
        # Served as cached (gzipped) to clients that accept it: no work here.
        if body.gzipped and "gzip" in request.headers.get("Accept-Encoding", ""):
            response = HttpResponse(body.gzipped, content_type="application/json")
            response["Content-Encoding"] = "gzip"
        else:
            response = HttpResponse(body.json(), content_type="application/json")
        patch_vary_headers(response, ["Accept-Encoding"])
        return response
