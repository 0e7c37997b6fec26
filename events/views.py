"""The events API: the catalogue (events on sale and their tiers, with what
is left and how many wait) and a reserved tier's seat map, read from the
cache of ``inventory.seating.seatmap``."""

from __future__ import annotations

from django.http import HttpResponse
from django.utils.cache import patch_vary_headers
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from events.domain import EventStatus
from events.selectors import (
    event_available,
    event_public_get,
    event_queue_length,
    events_public,
    tier_snapshot,
)
from events.serializers import EventDetailSerializer, EventListSerializer, SeatMapSerializer
from fairqueue.errors import ErrorCode, NotFound
from fairqueue.schema import error
from inventory.seating.seatmap import seat_map_read


class EventListView(APIView):
    @extend_schema(
        operation_id="event_list",
        responses=inline_serializer(
            "EventListPage", fields={"results": EventListSerializer(many=True)}
        ),
    )
    def get(self, request: Request) -> Response:
        events = events_public()[:200]
        return Response({"results": EventListSerializer(events, many=True).data})


class EventDetailView(APIView):
    @extend_schema(
        operation_id="event_detail",
        responses={200: EventDetailSerializer, 404: error("event_not_found")},
    )
    def get(self, request: Request, event_id: str) -> Response:
        event = event_public_get(event_id=event_id)
        context = {
            "available": event_available(event),
            "queue_length": event_queue_length(event_id=event.pk),
        }
        return Response(EventDetailSerializer(event, context=context).data)


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
        body = seat_map_read(event_id=tier.event_id, tier_id=tier.id)
        # Served as cached (gzipped) to clients that accept it: no work here.
        if body.gzipped and "gzip" in request.headers.get("Accept-Encoding", ""):
            response = HttpResponse(body.gzipped, content_type="application/json")
            response["Content-Encoding"] = "gzip"
        else:
            response = HttpResponse(body.json(), content_type="application/json")
        patch_vary_headers(response, ["Accept-Encoding"])
        return response
