from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from customers.authentication import IsCustomer, customer_of
from customers.serializers import (
    MeSerializer,
    OtpRequestSerializer,
    OtpSentSerializer,
    OtpVerifySerializer,
    SignInSerializer,
)
from customers.services import otp_request, otp_verify
from customers.throttling import FailOpenScopedRateThrottle
from fairqueue.api import parse
from fairqueue.schema import error


class OtpRequestView(APIView):
    # Signing in must work whatever stale token the client still sends.
    authentication_classes: list = []
    throttle_classes = [FailOpenScopedRateThrottle]
    throttle_scope = "otp_request"

    @extend_schema(
        operation_id="auth_otp_request",
        summary="Email a sign-in code",
        request=OtpRequestSerializer,
        responses={
            202: OtpSentSerializer,
            400: error("malformed_request: the body is not JSON."),
            422: error("validation_error: not an email address, or unknown fields."),
            429: error(
                "otp_resend_too_soon (a code was just sent to this address) or rate_limited; "
                "see the Retry-After header."
            ),
            503: error("email_unavailable: the code could not be sent; retry."),
        },
    )
    def post(self, request: Request) -> Response:
        data = parse(OtpRequestSerializer, request.data)
        sent = otp_request(email=data["email"])
        body = {"status": "sent", "expires_in": sent.expires_in, "resend_after": sent.resend_after}
        return Response(OtpSentSerializer(body).data, status=202)


class OtpVerifyView(APIView):
    authentication_classes: list = []
    throttle_classes = [FailOpenScopedRateThrottle]
    throttle_scope = "otp_verify"

    @extend_schema(
        operation_id="auth_otp_verify",
        summary="Exchange a sign-in code for a customer token",
        request=OtpVerifySerializer,
        responses={
            200: SignInSerializer,
            400: error("otp_invalid (details.attempts_left), otp_expired, or malformed_request."),
            403: error("otp_locked: too many wrong codes; ask for a new one."),
            422: error("validation_error: bad email or code format, or unknown fields."),
            429: error("rate_limited; see the Retry-After header."),
        },
    )
    def post(self, request: Request) -> Response:
        data = parse(OtpVerifySerializer, request.data)
        signed_in = otp_verify(email=data["email"], code=data["code"])
        body = {
            "token": signed_in.token,
            "customer_id": signed_in.customer_id,
            "expires_at": signed_in.expires_at,
        }
        return Response(SignInSerializer(body).data)


class MeView(APIView):
    permission_classes = [IsCustomer]

    @extend_schema(
        operation_id="auth_me",
        summary="The signed-in customer",
        responses={
            200: MeSerializer,
            401: error("not_authenticated, invalid_token, token_expired."),
        },
    )
    def get(self, request: Request) -> Response:
        customer = customer_of(request)
        return Response(MeSerializer({"customer_id": customer.id, "email": customer.email}).data)
