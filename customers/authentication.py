"""Customer sign-in on the API: ``Authorization: Bearer <customer token>``.

(The queue WebSocket does not take this token: a browser can only put it in
the URL, where proxies log it. It takes a single-use ticket instead, see
queueing/services/ws_tickets.py.)"""

from __future__ import annotations

import time
from typing import Any

from django.http import HttpRequest
from rest_framework import HTTP_HEADER_ENCODING, permissions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from customers.revocation import customer_signed_in
from customers.tokens import CustomerPrincipal, customer_token_verify
from fairqueue.errors import ErrorCode, Unauthenticated


def bearer_token(request: Request | HttpRequest) -> str | None:
    """The token of ``Authorization: Bearer <token>``; None without one (401
    for a malformed header). A view that checks the token itself (queueing's
    position read, which reads the sign-out state in its own round trip)
    starts here, with DRF's request or Django's."""
    # DRF's get_authorization_header, for Django's request too.
    raw = request.META.get("HTTP_AUTHORIZATION", b"")
    header = (raw.encode(HTTP_HEADER_ENCODING) if isinstance(raw, str) else raw).split()
    if not header or header[0].lower() != b"bearer":
        return None
    if len(header) != 2:
        raise Unauthenticated("The Authorization header must be 'Bearer <token>'.")
    try:
        return header[1].decode("ascii")
    except UnicodeDecodeError as exc:
        raise Unauthenticated("The token is not valid.", code=ErrorCode.INVALID_TOKEN) from exc


def token_signed(environ: dict[str, Any]) -> bool:
    """The request carries a customer token whose signature, audience and
    expiry check: the proof a customer's request shows to ride in its
    route's lane (fairqueue/lanes.py), read from the WSGI environ before the
    request takes a slot. Whether it was signed out is the view's to check
    (that reads Redis). The verified token is kept in the environ for the
    view (``customer_token_verified``): a request's token is verified once."""
    header = str(environ.get("HTTP_AUTHORIZATION", "")).split()
    if len(header) != 2 or header[0].lower() != "bearer":
        return False
    try:
        principal = customer_token_verify(header[1])
    except Unauthenticated:
        return False
    environ[_VERIFIED] = (header[1], principal)
    return True


# Where token_signed keeps what it verified (a WSGI environ key no header can set).
_VERIFIED = "fairqueue.customer_token"


def customer_token_verified(request: Request | HttpRequest, token: str) -> CustomerPrincipal:
    """``customer_token_verify`` of the request's ``token``, unless its lane's
    proof verified it already (``token_signed``) and it has not expired since."""
    held = request.META.get(_VERIFIED)
    if held is not None and held[0] == token:
        principal: CustomerPrincipal = held[1]
        if principal.expires_at is not None and principal.expires_at.timestamp() > time.time():
            return principal
    return customer_token_verify(token)


class CustomerTokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[CustomerPrincipal, str] | None:
        token = bearer_token(request)
        if token is None:
            return None
        return customer_signed_in(customer_token_verified(request, token)), token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class IsCustomer(permissions.BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.user, CustomerPrincipal)


def customer_of(request: Request) -> CustomerPrincipal:
    """The signed-in customer (the view's IsCustomer permission ran first)."""
    if not isinstance(request.user, CustomerPrincipal):
        raise Unauthenticated()
    return request.user
