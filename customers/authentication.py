"""Customer sign-in for the two interfaces: DRF (``Authorization: Bearer``)
and Channels (``?token=`` on the WebSocket URL)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from rest_framework import permissions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from customers.tokens import CustomerPrincipal, customer_token_verify
from fairqueue.errors import AppError, ErrorCode, Unauthenticated


class CustomerTokenAuthentication(BaseAuthentication):
    keyword = b"bearer"

    def authenticate(self, request: Request) -> tuple[CustomerPrincipal, str] | None:
        header = get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword:
            return None
        if len(header) != 2:
            raise Unauthenticated("The Authorization header must be 'Bearer <token>'.")
        try:
            token = header[1].decode("ascii")
        except UnicodeDecodeError as exc:
            raise Unauthenticated("The token is not valid.", code=ErrorCode.INVALID_TOKEN) from exc
        return customer_token_verify(token), token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class TokenAuthMiddleware:
    """Channels middleware: puts the customer of ``?token=`` in
    ``scope["customer"]`` (None when the token is missing or not a valid
    customer token; the consumer decides how to refuse)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict, receive: Any, send: Any) -> Any:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        token = (query.get("token") or [""])[0]
        customer = None
        if token:
            try:
                customer = customer_token_verify(token)
            except AppError:
                customer = None
        return await self.inner({**scope, "customer": customer}, receive, send)


class IsCustomer(permissions.BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.user, CustomerPrincipal)


def customer_of(request: Request) -> CustomerPrincipal:
    """The signed-in customer (the view's IsCustomer permission ran first)."""
    if not isinstance(request.user, CustomerPrincipal):
        raise Unauthenticated()
    return request.user
