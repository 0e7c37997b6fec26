from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from events.selectors import event_public_get, events_public
from fairqueue.schema import error
from queueing.selectors import queue_length
from storefront.selectors import event_available
from storefront.serializers import EventDetailSerializer, EventListSerializer


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
            "queue_length": queue_length(event_id=event.pk),
        }
        return Response(EventDetailSerializer(event, context=context).data)
