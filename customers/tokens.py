"""Customer tokens: who is calling the API (JWT, audience ``fairqueue:customer``).

Each token carries a ``jti`` (so that one token can be signed out) and the
customer's ``ver`` (token version) when it was minted (so that "sign out
everywhere" ends every older token); customers/revocation.py checks both.
"""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings

from fairqueue.errors import ErrorCode, Unauthenticated
from fairqueue.tokens import sign, verify

CUSTOMER_AUDIENCE = "fairqueue:customer"


@dataclass(frozen=True)
class CustomerPrincipal:
    """The authenticated customer of a request, taken from the token (plus
    one Redis read for revocation; no database read on the hot path)."""

    id: uuid.UUID
    email: str
    jti: str = ""
    version: int = 0
    expires_at: datetime | None = None
    is_authenticated: bool = True
    is_anonymous: bool = False

    @property
    def pk(self) -> uuid.UUID:
        return self.id


def customer_token_issue(
    *, customer_id: uuid.UUID, email: str, version: int = 0
) -> tuple[str, datetime]:
    return sign(
        {"sub": str(customer_id), "email": email, "jti": secrets.token_urlsafe(16), "ver": version},
        audience=CUSTOMER_AUDIENCE,
        ttl=settings.CUSTOMER_TOKEN_TTL,
    )


def customer_token_verify(token: str) -> CustomerPrincipal:
    """Signature, audience, expiry and shape; not revocation (see
    customers.revocation.customer_token_authenticate)."""
    claims = verify(token, audience=CUSTOMER_AUDIENCE)
    try:
        version = claims.get("ver", 0)
        if not isinstance(version, int) or isinstance(version, bool):
            raise TypeError("ver")
        return CustomerPrincipal(
            id=uuid.UUID(claims["sub"]),
            email=str(claims.get("email", "")),
            jti=str(claims.get("jti", "")),
            version=version,
            expires_at=datetime.fromtimestamp(claims["exp"], UTC),
        )
    except (ValueError, TypeError) as exc:
        raise Unauthenticated("The token is not valid.", code=ErrorCode.INVALID_TOKEN) from exc
