"""The payments REST interface and the gateway's webhook: parse, call one
service, shape the answer."""

import io
import uuid
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from customers.authentication import IsCustomer, customer_of
from customers.idempotency import IDEMPOTENCY_KEY, idempotent
from fairqueue.api import parse
from fairqueue.public_url import public_base_url
from fairqueue.schema import error
from payments.paystack import signature_valid
from payments.selectors import payment_get_for_customer
from payments.serializers import PAYMENT_CREATE_BODY, PaymentCreateIn, PaymentOut, payment_out
from payments.services import payment_initialize, payment_webhook_receive


class ClaimPaymentView(APIView):
    permission_classes = [IsCustomer]

    @extend_schema(
        operation_id="claim_payment_create",
        summary="Start paying for a claim (or get its live payment)",
        request={"application/json": PAYMENT_CREATE_BODY},
        parameters=[IDEMPOTENCY_KEY],
        responses={
            201: PaymentOut,
            200: OpenApiResponse(PaymentOut, description="The claim's live payment, unchanged."),
            404: error("claim_not_found"),
            409: error(
                "already_paid, claim_not_payable (the claim was released); or "
                "idempotency_in_progress (see the Retry-After header)."
            ),
            410: error("claim_expired"),
            422: error(
                "validation_error (the body is not an empty object), "
                "invalid_idempotency_key or idempotency_mismatch."
            ),
            503: error(
                "gateway_unavailable (the gateway did not answer), payments_unavailable "
                "(the gateway refused our merchant account: the claim stays held and gets "
                "the time back) or busy: retry after Retry-After."
            ),
        },
    )
    @idempotent("payments.create")
    def post(self, request: Request, claim_id: uuid.UUID) -> Response:
        parse(PaymentCreateIn, request.data)  # no body: {}
        start = payment_initialize(
            claim_id=claim_id,
            customer_id=customer_of(request).id,
            base_url=public_base_url(request),
        )
        return Response(
            payment_out(start.payment),
            status=status.HTTP_201_CREATED if start.created else status.HTTP_200_OK,
        )


class PaymentDetailView(APIView):
    permission_classes = [IsCustomer]

    @extend_schema(
        operation_id="payment_detail",
        responses={200: PaymentOut, 404: error("payment_not_found")},
    )
    def get(self, request: Request, payment_id: uuid.UUID) -> Response:
        payment = payment_get_for_customer(
            payment_id=payment_id, customer_id=customer_of(request).id
        )
        return Response(payment_out(payment))


class AnswerInJson(BaseContentNegotiation):
    """The gateway gets JSON whatever its Accept header says: a 406 would
    only make it deliver again for days."""

    def select_parser(self, request: Request, parsers: Iterable[BaseParser]) -> BaseParser:
        return next(iter(parsers))

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type


@extend_schema(exclude=True)
class PaystackWebhookView(APIView):
    """No authentication but the signature. The raw body is read before
    anything parses it: the signature covers those exact bytes. A refusal
    (bad signature, a body that is no JSON object, a busy payment row) is
    answered by the one exception handler, like every API error."""

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    throttle_classes: list[Any] = []
    content_negotiation_class = AnswerInJson

    def post(self, request: Request) -> Response:
        signature = request.headers.get("x-paystack-signature")
        # A hex digest is ASCII; anything else is no signature of ours (and
        # hmac.compare_digest refuses to compare non-ASCII text: a 500).
        if signature is not None and not signature.isascii():
            signature = ""
        outcome = payment_webhook_receive(body=request.body, signature=signature)
        return Response({"status": outcome.value})


def webhook_signed(environ: dict[str, Any]) -> bool:
    """The webhook's body, read ahead of its slot, carries our gateway's
    signature: the proof that lets it ride in the purchase lane
    (fairqueue/lanes.py). The view checks it again."""
    body = environ.get("wsgi.input")
    signature = environ.get("HTTP_X_PAYSTACK_SIGNATURE")
    if not isinstance(body, io.BytesIO) or not isinstance(signature, str):
        return False
    if not signature.isascii():
        return False
    return signature_valid(body.getvalue(), signature, settings.PAYSTACK_SECRET_KEY)
