"""Customer tokens: who is calling the API (JWT, audience ``fairqueue:customer``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from fairqueue.errors import ErrorCode, Unauthenticated
from fairqueue.tokens import sign, verify

CUSTOMER_AUDIENCE = "fairqueue:customer"


@dataclass(frozen=True)
class CustomerPrincipal:
    """The authenticated customer of a request, taken from the token alone
    (no database read on the hot path)."""

    id: uuid.UUID
    email: str
    is_authenticated: bool = True
    is_anonymous: bool = False

    @property
    def pk(self) -> uuid.UUID:
        return self.id


def customer_token_issue(*, customer_id: uuid.UUID, email: str) -> tuple[str, datetime]:
    return sign(
        {"sub": str(customer_id), "email": email},
        audience=CUSTOMER_AUDIENCE,
        ttl=settings.CUSTOMER_TOKEN_TTL,
    )


def customer_token_verify(token: str) -> CustomerPrincipal:
    claims = verify(token, audience=CUSTOMER_AUDIENCE)
    try:
        return CustomerPrincipal(id=uuid.UUID(claims["sub"]), email=str(claims.get("email", "")))
    except (ValueError, TypeError) as exc:
        raise Unauthenticated("The token is not valid.", code=ErrorCode.INVALID_TOKEN) from exc
