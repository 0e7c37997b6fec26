"""Signed tokens (JWT, HS256). Each kind of token has its own audience (the
app that mints it names it), so a token minted for one purpose is refused
everywhere else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
from django.conf import settings

from fairqueue.errors import ErrorCode, Unauthenticated

ISSUER = "fairqueue"
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
        raise Unauthenticated("The token has expired.", code=ErrorCode.TOKEN_EXPIRED) from exc
    except jwt.PyJWTError as exc:
        raise Unauthenticated("The token is not valid.", code=ErrorCode.INVALID_TOKEN) from exc
