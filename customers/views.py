from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from customers.authentication import IsCustomer, customer_of
from customers.revocation import customer_token_revoke, customer_tokens_revoke_all
from customers.serializers import (
    LogoutSerializer,
    MeSerializer,
    OtpRequestSerializer,
    OtpSentSerializer,
    OtpVerifySerializer,
    SignInSerializer,
)
from customers.services import otp_request, otp_verify
from customers.throttling import ClientRateThrottle
from fairqueue.api import parse
from fairqueue.challenge import CHALLENGE_HEADER_PARAMETER, ChallengeAction, challenge_verify
from fairqueue.schema import error


class OtpRequestView(APIView):
    # Signing in must work whatever stale token the client still sends.
    authentication_classes: list = []
    throttle_classes = [ClientRateThrottle]
    throttle_scope = "otp_request"

    @extend_schema(
        operation_id="auth_otp_request",
        summary="Email a sign-in code",
        request=OtpRequestSerializer,
        parameters=[CHALLENGE_HEADER_PARAMETER],
        responses={
            202: OtpSentSerializer,
            400: error("malformed_request: the body is not JSON."),
            403: error("challenge_failed: the bot challenge was missing or not passed."),
            422: error("validation_error: not an email address, or unknown fields."),
            429: error(
                "otp_resend_too_soon (this client just got a code) or rate_limited (this "
                "address or this mailbox asked too often); see the Retry-After header."
            ),
            503: error(
                "email_unavailable (the code could not be sent), challenge_unavailable or "
                "busy (rate limits cannot be counted); retry."
            ),
        },
    )
    def post(self, request: Request) -> Response:
        data = parse(OtpRequestSerializer, request.data)
        challenge_verify(request, action=ChallengeAction.SIGNIN)
        sent = otp_request(email=data["email"], nonce=data.get("nonce"))
        body = {
            "status": "sent",
            "expires_in": sent.expires_in,
            "resend_after": sent.resend_after,
            "nonce": sent.nonce,
        }
        return Response(OtpSentSerializer(body).data, status=202)


class OtpVerifyView(APIView):
    authentication_classes: list = []
    throttle_classes = [ClientRateThrottle]
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
            503: error("busy: rate limits cannot be counted; retry."),
        },
    )
    def post(self, request: Request) -> Response:
        data = parse(OtpVerifySerializer, request.data)
        signed_in = otp_verify(email=data["email"], code=data["code"], nonce=data["nonce"])
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


class LogoutView(APIView):
    permission_classes = [IsCustomer]

    @extend_schema(
        operation_id="auth_logout",
        summary="Sign out this token (or, with everywhere, every token of the customer)",
        request=LogoutSerializer,
        responses={
            204: None,
            401: error("not_authenticated, invalid_token, token_expired, token_revoked."),
            422: error("validation_error: unknown fields."),
        },
    )
    def post(self, request: Request) -> Response:
        data = parse(LogoutSerializer, request.data)
        if data["everywhere"]:
            customer_tokens_revoke_all(customer_id=customer_of(request).id)
        else:
            customer_token_revoke(principal=customer_of(request))
        return Response(status=204)
