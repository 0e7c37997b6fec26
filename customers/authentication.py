"""Customer sign-in on the API: ``Authorization: Bearer <customer token>``.

(The queue WebSocket does not take this token: a browser can only put it in
the URL, where proxies log it. It takes a single-use ticket instead, see
queueing/services/ws_tickets.py.)"""

from __future__ import annotations

from typing import Any

from rest_framework import permissions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from customers.revocation import customer_token_authenticate
from customers.tokens import CustomerPrincipal
from fairqueue.errors import ErrorCode, Unauthenticated


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
        return self.principal(token, request), token

    def principal(self, token: str, request: Request) -> CustomerPrincipal:
        """The customer of a well-formed bearer token (a view may read what it
        needs in the same round trip as the sign-out check: override)."""
        return customer_token_authenticate(token)

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
