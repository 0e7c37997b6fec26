"""Signed tokens (JWT, HS256). Each kind of token has its own audience, so a
token minted for one purpose is refused everywhere else."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
from django.conf import settings

from fairqueue.errors import Unauthenticated

ISSUER = "fairqueue"
CUSTOMER_AUDIENCE = "fairqueue:customer"
ADMISSION_AUDIENCE = "fairqueue:admission"
_ALGORITHM = "HS256"


def sign(claims: dict[str, Any], *, audience: str, ttl: timedelta) -> tuple[str, datetime]:
    now = datetime.now(UTC)
    expires_at = now + ttl
    payload = {
        **claims,
        "iss": ISSUER,
        "aud": audience,
        "iat": int(now.timestamp()),
        "exp": int(expires_at.timestamp()),
    }
    return jwt.encode(payload, settings.TOKEN_SIGNING_KEY, algorithm=_ALGORITHM), expires_at


def verify(token: str, *, audience: str) -> dict[str, Any]:
    """Decode and check signature, issuer, audience and expiry."""
    try:
        return jwt.decode(
            token,
            settings.TOKEN_SIGNING_KEY,
            algorithms=[_ALGORITHM],
            audience=audience,
            issuer=ISSUER,
            options={"require": ["exp", "aud", "iss", "sub"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise Unauthenticated("The token has expired.", code="token_expired") from exc
    except jwt.PyJWTError as exc:
        raise Unauthenticated("The token is not valid.", code="invalid_token") from exc


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
        raise Unauthenticated("The token is not valid.", code="invalid_token") from exc
