"""The queue's REST interface: parse, call one service, shape the answer.

These are the hottest endpoints of a sale (every waiting customer joins once
and polls), so they skip what DRF would do for nothing here: content
negotiation (the API only speaks JSON) and the Response/renderer round (the
body is a small dict, dumped once). Errors still leave through DRF's
exception handler as the one envelope. Their serializers describe the bodies
for the schema."""

import json
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from customers.authentication import (
    IsCustomer,
    bearer_token,
    customer_of,
    customer_token_verified,
)
from customers.revocation import customer_signed_in
from customers.throttling import READS, customer_bucket_take, read_bucket_settle
from fairqueue.challenge import (
    CHALLENGE_HEADER_PARAMETER,
    ChallengeAction,
    challenge_enabled,
    challenge_verify,
)
from fairqueue.errors import AppError, ErrorCode, json_error
from fairqueue.schema import error
from queueing.serializers import (
    QueueJoinedSerializer,
    QueuePositionSerializer,
    WsTicketSerializer,
    joined_body,
    position_body,
)
from queueing.services import (
    queue_abandon,
    queue_join_signed_in,
    queue_position,
    queue_position_signed_in,
    ws_ticket_issue,
)
from queueing.services.draw import draw_shard_answer
from queueing.services.line_state import line_state_answer
from queueing.wsgi import CACHE_CONTROL, DRAW_CACHE_CONTROL, DRAW_SHARD

# json.dumps with separators makes an encoder per call; this one is shared.
_COMPACT = json.JSONEncoder(separators=(",", ":"))


def _json(body: dict, status: int = 200) -> HttpResponse:
    # Bytes: HttpResponse then has no charset to look up and encode with.
    return HttpResponse(
        _COMPACT.encode(body).encode(), status=status, content_type="application/json"
    )


class HotPathView(APIView):
    permission_classes = [IsCustomer]
    renderer_classes = [JSONRenderer]
    _negotiated = (JSONRenderer(), JSONRenderer.media_type)

    def perform_content_negotiation(self, request: Request, force: bool = False) -> tuple:
        return self._negotiated


class QueueView(HotPathView):
    def perform_authentication(self, request: Request) -> None:
        """A join's token: its signature here, its sign-out state in the
        join's own INSERT (``queue_join_signed_in``: no Redis read). Leaving,
        and a request without a token: the usual path."""
        token = bearer_token(request) if request.method == "POST" else None
        if token is None:
            super().perform_authentication(request)
            return
        request.auth = token
        request.user = customer_token_verified(request, token)  # type: ignore[assignment]  # a customer, as the token class gives

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
        principal = customer_of(request)
        if challenge_enabled():  # a signed-out token is refused before the verifier is asked
            customer_signed_in(principal)
        challenge_verify(request, action=ChallengeAction.QUEUE_JOIN)
        result = queue_join_signed_in(event_id=event_id, principal=principal)
        return _json(joined_body(result, event_id=event_id, customer_id=principal.id), status=201)

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


# The hottest read of a sale. A GET with a bearer token is answered by
# ``dispatch`` below, without DRF's request wrapping, content negotiation,
# permission and throttle objects: none of them has anything to decide here
# (the token is the permission, the read bucket is taken in the place's own
# Redis round trip), and together they cost more than our part of the read.
# Any error leaves through DRF's exception handling, as the one envelope;
# every other request (no token, HEAD, OPTIONS, other methods) goes DRF's
# whole way. (A comment, not a docstring: the schema and OPTIONS show those.)
class QueuePositionView(HotPathView):
    # DRF's default headers (``default_response_headers``): Allow, as the
    # other answers of this view give it.
    _ALLOW = "GET, HEAD, OPTIONS"

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if request.method != "GET" or "HTTP_AUTHORIZATION" not in request.META:
            return super().dispatch(request, *args, **kwargs)
        self.args, self.kwargs = args, kwargs
        try:
            response: HttpResponseBase | None = self._signed_in_read(request, kwargs["event_id"])
        except Exception as exc:  # as DRF's dispatch: its handler makes the envelope
            return self._refused(request, exc, *args, **kwargs)
        if response is None:  # a header that is not a bearer token: DRF's way (401)
            return super().dispatch(request, *args, **kwargs)
        response["Allow"] = self._ALLOW
        return response

    def _signed_in_read(self, request: HttpRequest, event_id: str) -> HttpResponse | None:
        """The token's signature here, its sign-out state read and its read
        bucket taken with the place in one Redis round trip
        (``queue_position_signed_in``); 429 when the bucket was empty. When
        the bucket could not be taken with the place (Redis down, the sale
        over), it is taken on its own, as the throttle takes it."""
        token = bearer_token(request)
        if token is None:
            return None
        principal = customer_token_verified(request, token)
        read = queue_position_signed_in(event_id=event_id, principal=principal)
        if read.bucket_wait_ms is None:
            customer_bucket_take(scope=READS, customer_id=principal.id)
        else:
            read_bucket_settle(request, wait_ms=read.bucket_wait_ms)  # 429 when empty
        assert read.position is not None  # a taken bucket token comes with the place
        return _json(position_body(read.position, event_id=event_id, customer_id=principal.id))

    def _refused(
        self, request: HttpRequest, exc: Exception, *args: Any, **kwargs: Any
    ) -> HttpResponseBase:
        drf_request = self.initialize_request(request, *args, **kwargs)
        drf_request.accepted_renderer, drf_request.accepted_media_type = self._negotiated
        self.request, self.headers = drf_request, self.default_response_headers
        return self.finalize_response(drf_request, self.handle_exception(exc), *args, **kwargs)

    @extend_schema(
        operation_id="queue_position",
        summary="Where am I in the line (and my admission token once admitted)",
        responses={
            200: QueuePositionSerializer,
            404: error("event_not_found or not_in_queue"),
        },
    )
    def get(self, request: Request, event_id: str) -> HttpResponse:
        customer = customer_of(request)  # DRF's way (HEAD): signed in by the token class
        return _json(
            position_body(
                queue_position(event_id=event_id, customer_id=customer.id),
                event_id=event_id,
                customer_id=customer.id,
            )
        )


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


class QueueLineStateView(APIView):
    """The public line state: no sign-in, the same bytes for everyone,
    cacheable. Under the web server it is answered before Django
    (``queueing.wsgi``); this view answers the rest (a state to build from
    Postgres, HEAD, the test client). DRF is here for the schema only:
    ``dispatch`` answers without it (no request wrapping, authentication,
    permissions or negotiation)."""

    authentication_classes: list[Any] = []
    permission_classes: list[Any] = []
    throttle_classes: list[Any] = []  # nobody's: the same bytes for everyone

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            response = json_error(ErrorCode.METHOD_NOT_ALLOWED, "Only GET.", 405)
            response["Allow"] = "GET, HEAD"
            return response
        return self.get(request, **kwargs)

    @extend_schema(
        operation_id="queue_line_state",
        summary="The line as everyone sees it (public, cacheable)",
        description=(
            "How far admission has reached (`served`, `frontier`: the highest score admitted), "
            "how many wait, the measured rate, the event's status, when the next tick is due, "
            "and the `epoch` of the scores. Written once per admission tick; the same bytes "
            "for every customer, `Cache-Control: public, max-age=1`. A page places itself "
            "from it with its own `score` and `position` (docs/API.md)."
        ),
        auth=[],
        responses={
            200: OpenApiResponse(description="The line state (JSON)."),
            404: error("event_not_found"),
        },
    )
    def get(self, request: HttpRequest, event_id: Any) -> HttpResponse:
        text = line_state_answer(event_id=event_id)
        if text is None:
            return json_error(ErrorCode.EVENT_NOT_FOUND, "No such event.", 404)
        response = HttpResponse(text, content_type="application/json")
        response["Cache-Control"] = CACHE_CONTROL
        return response


class QueueDrawShardView(QueueLineStateView):
    """One shard of the pre-queue draw's public documents: no sign-in, the
    same bytes for everyone, never changing once written. Under the web
    server a document a process holds (or reads from Redis) is answered
    before Django (``queueing.wsgi``); this view answers the rest: a shard to
    rebuild from Postgres, a draw not made, a bad shard."""

    @extend_schema(
        operation_id="queue_draw_shard",
        summary="One shard of the pre-queue draw's results (public, cacheable)",
        description=(
            "`{event_id, epoch: 1, served: 0, entries: {<entry>: rank}}`: the ranks the draw "
            "gave, keyed by hex digits 3 to 16 of SHA-256(draw_key); `shard` is its first two. "
            "A pre-queue page takes `position = score = rank`, `served`, `epoch` from it. "
            "The same bytes for everyone, `Cache-Control: public, max-age=300` (docs/API.md)."
        ),
        auth=[],
        parameters=[
            OpenApiParameter(
                "shard",
                str,
                OpenApiParameter.PATH,
                pattern=f"^{DRAW_SHARD.pattern}$",
                description="Two lowercase hex digits; any other shard is 404 not_found.",
            )
        ],
        responses={
            200: OpenApiResponse(description="The shard's document (JSON)."),
            404: error("event_not_found, draw_not_made (before the draw), or not_found (shard)"),
            503: error("busy: the documents are being rebuilt; retry shortly."),
        },
    )
    def get(self, request: HttpRequest, event_id: Any, shard: str = "") -> HttpResponse:
        if not DRAW_SHARD.fullmatch(shard):
            return json_error(ErrorCode.NOT_FOUND, "A shard is two lowercase hex digits.", 404)
        try:
            body = draw_shard_answer(event_id=event_id, shard=shard)
        except AppError as exc:
            refused = json_error(exc.code, exc.message, exc.status)
            if exc.retry_after is not None:
                refused["Retry-After"] = str(exc.retry_after)
            return refused
        response = HttpResponse(body, content_type="application/json")
        response["Cache-Control"] = DRAW_CACHE_CONTROL
        return response
