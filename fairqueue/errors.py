"""One error hierarchy for the whole application, and the DRF handler that
turns any error into the envelope ``{"error": {"code", "message", "details"}}``.

Services raise ``AppError`` subclasses; views never catch them. Every code
the API can answer with is a member of ``ErrorCode`` (the OpenAPI schema's
``ErrorCodeEnum``): a new code is one line there.
"""

from __future__ import annotations

import logging
from enum import StrEnum
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions as drf
from rest_framework.response import Response

logger = logging.getLogger(__name__)


class ErrorCode(StrEnum):
    """Every stable code of the error envelope. Clients branch on these, so a
    code is never renamed or reused; a new one is one line here."""

    # The plumbing: request parsing, authentication, generic answers.
    BAD_REQUEST = "bad_request"
    MALFORMED_REQUEST = "malformed_request"
    VALIDATION_ERROR = "validation_error"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    NOT_ACCEPTABLE = "not_acceptable"
    NOT_AUTHENTICATED = "not_authenticated"
    INVALID_TOKEN = "invalid_token"  # noqa: S105  (an error code, not a secret)
    TOKEN_EXPIRED = "token_expired"  # noqa: S105  (an error code, not a secret)
    TOKEN_REVOKED = "token_revoked"  # noqa: S105  (an error code, not a secret)
    CHALLENGE_FAILED = "challenge_failed"
    CHALLENGE_UNAVAILABLE = "challenge_unavailable"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    INVALID_TRANSITION = "invalid_transition"
    GONE = "gone"
    RATE_LIMITED = "rate_limited"
    BUSY = "busy"
    SERVER_ERROR = "server_error"
    # Idempotency-Key.
    INVALID_IDEMPOTENCY_KEY = "invalid_idempotency_key"
    IDEMPOTENCY_MISMATCH = "idempotency_mismatch"
    IDEMPOTENCY_IN_PROGRESS = "idempotency_in_progress"
    # Sign-in codes.
    OTP_INVALID = "otp_invalid"
    OTP_EXPIRED = "otp_expired"
    OTP_LOCKED = "otp_locked"
    OTP_RESEND_TOO_SOON = "otp_resend_too_soon"
    EMAIL_UNAVAILABLE = "email_unavailable"
    # Events and tiers.
    EVENT_NOT_FOUND = "event_not_found"
    EVENT_NOT_ON_SALE = "event_not_on_sale"
    TIER_NOT_FOUND = "tier_not_found"
    # The waiting room.
    ALREADY_IN_QUEUE = "already_in_queue"
    NOT_IN_QUEUE = "not_in_queue"
    ADMISSION_EXPIRED = "admission_expired"
    ADMISSION_INVALID = "admission_invalid"
    # The one extension of an admission's time to choose was used.
    ALREADY_EXTENDED = "already_extended"
    DRAW_NOT_MADE = "draw_not_made"
    # The waiting list of a sold-out event.
    WAITLIST_CLOSED = "waitlist_closed"
    ALREADY_ON_WAITLIST = "already_on_waitlist"
    NOT_ON_WAITLIST = "not_on_waitlist"
    # Claims.
    CLAIM_NOT_FOUND = "claim_not_found"
    INVALID_QUANTITY = "invalid_quantity"
    CLAIM_IN_PROGRESS = "claim_in_progress"
    ALREADY_CLAIMED = "already_claimed"
    SOLD_OUT = "sold_out"
    NOT_ENOUGH_TICKETS = "not_enough_tickets"
    SEATS_UNAVAILABLE = "seats_unavailable"
    SEAT_NOT_FOUND = "seat_not_found"
    NOT_RESERVED_SEATING = "not_reserved_seating"
    CLAIM_EXPIRED = "claim_expired"
    CLAIM_NOT_PAYABLE = "claim_not_payable"
    PAYMENT_IN_FLIGHT = "payment_in_flight"
    # Issued tickets at the door.
    TICKET_NOT_FOUND = "ticket_not_found"
    TICKET_ALREADY_USED = "ticket_already_used"
    TICKET_VOID = "ticket_void"
    TICKET_OTHER_EVENT = "ticket_other_event"
    TICKET_ON_RESALE = "ticket_on_resale"
    # Returns and transfers.
    RETURNS_CLOSED = "returns_closed"
    TICKET_NOT_RETURNABLE = "ticket_not_returnable"
    RETURN_NOT_FOUND = "return_not_found"
    RETURN_TAKEN = "return_taken"
    # The purchase's account says no ticket of it may move (disputed, refunded).
    TICKET_NOT_MOVABLE = "ticket_not_movable"
    TRANSFERS_NOT_ALLOWED = "transfers_not_allowed"
    TRANSFER_PENDING = "transfer_pending"
    TRANSFER_NOT_FOUND = "transfer_not_found"
    TRANSFER_NOT_PENDING = "transfer_not_pending"
    # Payments.
    PAYMENT_NOT_FOUND = "payment_not_found"
    ALREADY_PAID = "already_paid"
    GATEWAY_UNAVAILABLE = "gateway_unavailable"
    # The gateway refused our merchant account: the buyer's claim is kept.
    PAYMENTS_UNAVAILABLE = "payments_unavailable"
    INVALID_SIGNATURE = "invalid_signature"


class AppError(Exception):
    """An expected failure with a stable snake_case ``code`` and an HTTP status."""

    status = 400
    code: ErrorCode = ErrorCode.BAD_REQUEST
    message = "The request could not be processed."

    def __init__(
        self,
        message: str | None = None,
        *,
        code: ErrorCode | None = None,
        details: dict[str, Any] | None = None,
        retry_after: int | None = None,
    ) -> None:
        self.message = message or self.message
        self.code = code or self.code
        self.details = details or {}
        self.retry_after = retry_after
        super().__init__(self.message)


class InvalidInput(AppError):
    status = 422
    code = ErrorCode.VALIDATION_ERROR
    message = "The request body is not valid."


class Unauthenticated(AppError):
    status = 401
    code = ErrorCode.NOT_AUTHENTICATED
    message = "Authentication credentials were not provided or are invalid."


class Forbidden(AppError):
    status = 403
    code = ErrorCode.FORBIDDEN
    message = "You may not do this."


class NotFound(AppError):
    status = 404
    code = ErrorCode.NOT_FOUND
    message = "Not found."


class Conflict(AppError):
    status = 409
    code = ErrorCode.CONFLICT
    message = "The request conflicts with the current state."


class InvalidTransition(Conflict):
    code = ErrorCode.INVALID_TRANSITION
    message = "This change is not allowed in the current state."


class Gone(AppError):
    status = 410
    code = ErrorCode.GONE
    message = "No longer available."


class RateLimited(AppError):
    status = 429
    code = ErrorCode.RATE_LIMITED
    message = "Too many requests."


class Busy(AppError):
    """Lock contention or a dependency briefly unavailable: retry shortly."""

    status = 503
    code = ErrorCode.BUSY
    message = "Busy, retry shortly."

    def __init__(self, message: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("retry_after", 1)
        super().__init__(message, **kwargs)


class PayloadTooLarge(AppError):
    status = 413
    code = ErrorCode.PAYLOAD_TOO_LARGE
    message = "The request body is too large."


def _envelope(code: ErrorCode, message: str, details: Any = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


_DRF_CODES: list[tuple[type[drf.APIException], int, ErrorCode]] = [
    (drf.ParseError, 400, ErrorCode.MALFORMED_REQUEST),
    (drf.UnsupportedMediaType, 415, ErrorCode.UNSUPPORTED_MEDIA_TYPE),
    (drf.NotAuthenticated, 401, ErrorCode.NOT_AUTHENTICATED),
    (drf.AuthenticationFailed, 401, ErrorCode.NOT_AUTHENTICATED),
    (drf.PermissionDenied, 403, ErrorCode.FORBIDDEN),
    (drf.NotFound, 404, ErrorCode.NOT_FOUND),
    (drf.MethodNotAllowed, 405, ErrorCode.METHOD_NOT_ALLOWED),
    (drf.NotAcceptable, 406, ErrorCode.NOT_ACCEPTABLE),
    (drf.Throttled, 429, ErrorCode.RATE_LIMITED),
    (drf.ValidationError, 422, ErrorCode.VALIDATION_ERROR),
]


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF ``EXCEPTION_HANDLER``: every error leaves as the one envelope."""
    from rest_framework.views import set_rollback  # rest_framework.views imports us

    headers: dict[str, str] = {}
    if isinstance(exc, RequestDataTooBig):  # body over DATA_UPLOAD_MAX_MEMORY_SIZE
        exc = _too_large()
    if isinstance(exc, AppError):
        set_rollback()
        if exc.retry_after is not None:
            headers["Retry-After"] = str(exc.retry_after)
        return Response(
            _envelope(exc.code, exc.message, exc.details), status=exc.status, headers=headers
        )
    if isinstance(exc, Http404):
        exc = drf.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = drf.PermissionDenied()
    elif isinstance(exc, DjangoValidationError):
        exc = drf.ValidationError(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    if not isinstance(exc, drf.APIException):
        return None  # a real bug: let Django log it and answer 500
    set_rollback()
    # An APIException no rule above names (none today): a generic code.
    status = exc.status_code
    code = ErrorCode.SERVER_ERROR if status >= 500 else ErrorCode.BAD_REQUEST
    for klass, mapped_status, mapped_code in _DRF_CODES:
        if isinstance(exc, klass):
            status, code = mapped_status, mapped_code
            break
    details: dict[str, Any]
    if isinstance(exc, drf.ValidationError):
        message, details = "The request body is not valid.", {"fields": exc.detail}
    else:
        message, details = str(exc.detail), {}
    # Neither attribute is in the DRF stubs: Throttled.wait, and the
    # WWW-Authenticate value APIView.handle_exception sets on the exception.
    wait: float | None = getattr(exc, "wait", None)
    if isinstance(exc, drf.Throttled) and wait is not None:
        retry_after = max(1, int(wait + 0.999))
        headers["Retry-After"] = str(retry_after)
        details = {"retry_after": retry_after}
    auth_header: str | None = getattr(exc, "auth_header", None)
    if auth_header:
        headers["WWW-Authenticate"] = auth_header
    return Response(_envelope(code, message, details), status=status, headers=headers)


def json_error(code: ErrorCode, message: str, status: int) -> JsonResponse:
    """The envelope for plain Django views (404/500 handlers, health check)."""
    return JsonResponse(_envelope(code, message), status=status)


def handler404(request, exception=None):
    """JSON envelope for API clients, the HTML page for people."""
    if request.path.startswith("/api/"):
        return json_error(ErrorCode.NOT_FOUND, "Not found.", 404)
    from django.shortcuts import render

    return render(request, "404.html", status=404)


def handler403(request, exception=None):
    """A page someone may not open: the envelope for API clients; for people
    a page that says so and where to go instead (the admin's index for staff
    inside the admin, the events otherwise), never a bare "403 Forbidden"."""
    if request.path.startswith("/api/"):
        return json_error(ErrorCode.FORBIDDEN, "You may not do this.", 403)
    from django.shortcuts import render

    in_admin = request.path.startswith("/admin/") and getattr(request.user, "is_staff", False)
    template = "admin/403.html" if in_admin else "403.html"
    return render(request, template, status=403)


@csrf_exempt  # an unknown API path is a 404 envelope for POST too, not a CSRF page
def api_not_found(request, *args, **kwargs):
    """Any unknown path under /api/: the envelope, in DEBUG too (Django's
    debug 404 page is HTML), and no slash-appending redirect that would turn
    a POST into a GET."""
    from django.urls import Resolver404, resolve

    message = "Not found."
    if not request.path.endswith("/"):
        try:
            match = resolve(request.path + "/")
        except Resolver404:
            match = None
        if match is not None and match.func is not api_not_found:
            message = f"Not found. API paths end with '/': {request.path}/"
    return json_error(ErrorCode.NOT_FOUND, message, 404)


def _too_large() -> PayloadTooLarge:
    from django.conf import settings

    return PayloadTooLarge(details={"max_bytes": settings.DATA_UPLOAD_MAX_MEMORY_SIZE})


def handler400(request, exception=None):
    """Django's answer to a SuspiciousOperation outside DRF (e.g. a webhook
    body over DATA_UPLOAD_MAX_MEMORY_SIZE): the envelope, not an HTML page."""
    if isinstance(exception, RequestDataTooBig):
        error = _too_large()
        return JsonResponse(_envelope(error.code, error.message, error.details), status=413)
    return json_error(ErrorCode.BAD_REQUEST, "The request could not be processed.", 400)


def handler500(request):
    return json_error(ErrorCode.SERVER_ERROR, "Internal error.", 500)
