"""The queue's REST interface: parse, call one service, shape the answer.

These are the hottest endpoints of a sale (every waiting customer joins once
and polls), so they skip what DRF would do for nothing here: content
negotiation (the API only speaks JSON) and the Response/renderer round (the
body is a small dict, dumped once). Errors still leave through DRF's
exception handler as the one envelope. Their serializers describe the bodies
for the schema."""

import json

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from customers.authentication import IsCustomer, customer_of
from fairqueue.challenge import CHALLENGE_HEADER_PARAMETER, ChallengeAction, challenge_verify
from fairqueue.schema import error
from queueing.serializers import (
    QueueJoinedSerializer,
    QueuePositionSerializer,
    WsTicketSerializer,
    joined_body,
    position_body,
)
from queueing.services import queue_abandon, queue_join, queue_position, ws_ticket_issue


def _json(body: dict, status: int = 200) -> HttpResponse:
    return HttpResponse(
        json.dumps(body, separators=(",", ":")), status=status, content_type="application/json"
    )


class HotPathView(APIView):
    permission_classes = [IsCustomer]
    renderer_classes = [JSONRenderer]
    _negotiated = (JSONRenderer(), JSONRenderer.media_type)

    def perform_content_negotiation(self, request: Request, force: bool = False) -> tuple:
        return self._negotiated


class QueueView(HotPathView):
    @extend_schema(
        operation_id="queue_join",
        summary="Join the waiting room of an event",
        request=None,
        parameters=[CHALLENGE_HEADER_PARAMETER],
        responses={
            201: QueueJoinedSerializer,
            401: error("not_authenticated / invalid_token"),
            403: error("challenge_failed: the bot challenge was missing or not passed."),
            404: error("event_not_found"),
            409: error(
                "already_in_queue, event_not_on_sale, or already_claimed "
                "(details.claim_id names the claim that holds the tickets)"
            ),
            503: error("challenge_unavailable or busy: retry shortly."),
        },
    )
    def post(self, request: Request, event_id: str) -> HttpResponse:
        challenge_verify(request, action=ChallengeAction.QUEUE_JOIN)
        result = queue_join(event_id=event_id, customer_id=customer_of(request).id)
        return _json(joined_body(result), status=201)

    @extend_schema(
        operation_id="queue_leave",
        summary="Give up a waiting place",
        responses={
            204: None,
            404: error("event_not_found or not_in_queue"),
            409: error("invalid_transition: only a WAITING place can be given up"),
        },
    )
    def delete(self, request: Request, event_id: str) -> Response:
        queue_abandon(event_id=event_id, customer_id=customer_of(request).id)
        return Response(status=204)


class QueuePositionView(HotPathView):
    @extend_schema(
        operation_id="queue_position",
        summary="Where am I in the line (and my admission token once admitted)",
        responses={
            200: QueuePositionSerializer,
            404: error("event_not_found or not_in_queue"),
        },
    )
    def get(self, request: Request, event_id: str) -> HttpResponse:
        result = queue_position(event_id=event_id, customer_id=customer_of(request).id)
        return _json(position_body(result))


class QueueWsTicketView(APIView):
    permission_classes = [IsCustomer]
    customer_bucket = "ws_tickets"  # each ticket is a Redis key: customers/throttling.py

    @extend_schema(
        operation_id="queue_ws_ticket",
        summary="A single-use ticket that opens the queue WebSocket (?ticket=)",
        request=None,
        responses={
            201: WsTicketSerializer,
            401: error("not_authenticated / invalid_token / token_revoked"),
            404: error("event_not_found"),
            503: error("busy: retry shortly"),
        },
    )
    def post(self, request: Request, event_id: str) -> Response:
        issued = ws_ticket_issue(event_id=event_id, customer_id=customer_of(request).id)
        body = {"ticket": issued.ticket, "expires_in": issued.expires_in}
        return Response(WsTicketSerializer(body).data, status=201)
