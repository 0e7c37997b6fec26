"""One error hierarchy for the whole application, and the DRF handler that
turns any error into the envelope ``{"error": {"code", "message", "details"}}``.

Services raise ``AppError`` subclasses; views never catch them.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions as drf
from rest_framework.response import Response

logger = logging.getLogger(__name__)


class AppError(Exception):
    """An expected failure with a stable snake_case ``code`` and an HTTP status."""

    status = 400
    code = "bad_request"
    message = "The request could not be processed."

    def __init__(
        self,
        message: str | None = None,
        *,
        code: str | None = None,
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
    code = "validation_error"
    message = "The request body is not valid."


class Unauthenticated(AppError):
    status = 401
    code = "not_authenticated"
    message = "Authentication credentials were not provided or are invalid."


class Forbidden(AppError):
    status = 403
    code = "forbidden"
    message = "You may not do this."


class NotFound(AppError):
    status = 404
    code = "not_found"
    message = "Not found."


class Conflict(AppError):
    status = 409
    code = "conflict"
    message = "The request conflicts with the current state."


class InvalidTransition(Conflict):
    code = "invalid_transition"
    message = "This change is not allowed in the current state."


class Gone(AppError):
    status = 410
    code = "gone"
    message = "No longer available."


class RateLimited(AppError):
    status = 429
    code = "rate_limited"
    message = "Too many requests."


class Busy(AppError):
    """Lock contention or a dependency briefly unavailable: retry shortly."""

    status = 503
    code = "busy"
    message = "Busy, retry shortly."

    def __init__(self, message: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("retry_after", 1)
        super().__init__(message, **kwargs)


class PayloadTooLarge(AppError):
    status = 413
    code = "payload_too_large"
    message = "The request body is too large."


class GatewayError(AppError):
    status = 502
    code = "gateway_error"
    message = "The payment gateway could not be reached."


def _envelope(code: str, message: str, details: Any = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


_DRF_CODES: list[tuple[type[drf.APIException], int, str]] = [
    (drf.ParseError, 400, "malformed_request"),
    (drf.UnsupportedMediaType, 415, "unsupported_media_type"),
    (drf.NotAuthenticated, 401, "not_authenticated"),
    (drf.AuthenticationFailed, 401, "not_authenticated"),
    (drf.PermissionDenied, 403, "forbidden"),
    (drf.NotFound, 404, "not_found"),
    (drf.MethodNotAllowed, 405, "method_not_allowed"),
    (drf.NotAcceptable, 406, "not_acceptable"),
    (drf.Throttled, 429, "rate_limited"),
    (drf.ValidationError, 422, "validation_error"),
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
    status, code = exc.status_code, "error"
    for klass, mapped_status, mapped_code in _DRF_CODES:
        if isinstance(exc, klass):
            status, code = mapped_status, mapped_code
            break
    if isinstance(exc, drf.ValidationError):
        message, details = "The request body is not valid.", {"fields": exc.detail}
    else:
        message, details = str(exc.detail), {}
    if isinstance(exc, drf.Throttled) and exc.wait is not None:
        retry_after = max(1, int(exc.wait + 0.999))
        headers["Retry-After"] = str(retry_after)
        details = {"retry_after": retry_after}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    return Response(_envelope(code, message, details), status=status, headers=headers)


def json_error(code: str, message: str, status: int) -> JsonResponse:
    """The envelope for plain Django views (404/500 handlers, health check)."""
    return JsonResponse(_envelope(code, message), status=status)


def handler404(request, exception=None):
    """JSON envelope for API clients, the HTML page for people."""
    if request.path.startswith("/api/"):
        return json_error("not_found", "Not found.", 404)
    from django.shortcuts import render

    return render(request, "404.html", status=404)


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
    return json_error("not_found", message, 404)


def _too_large() -> PayloadTooLarge:
    from django.conf import settings

    return PayloadTooLarge(details={"max_bytes": settings.DATA_UPLOAD_MAX_MEMORY_SIZE})


def handler400(request, exception=None):
    """Django's answer to a SuspiciousOperation outside DRF (e.g. a webhook
    body over DATA_UPLOAD_MAX_MEMORY_SIZE): the envelope, not an HTML page."""
    if isinstance(exception, RequestDataTooBig):
        error = _too_large()
        return JsonResponse(_envelope(error.code, error.message, error.details), status=413)
    return json_error("bad_request", "The request could not be processed.", 400)


def handler500(request):
    return json_error("server_error", "Internal error.", 500)
