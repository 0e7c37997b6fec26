"""Signed tokens (JWT, HS256). Each kind of token has its own audience (the
app that mints it names it), so a token minted for one purpose is refused
everywhere else."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
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


def verify(token: str, *, audience: str, check_expiry: bool = True) -> dict[str, Any]:
    """Decode and check signature, issuer, audience and expiry. With
    ``check_expiry=False`` the caller holds a better authority on whether the
    token is still good than the ``exp`` it was minted with (it is still
    required to be there)."""
    claims = _verify_own(token, audience=audience, check_expiry=check_expiry)
    if claims is not None:
        return claims
    try:
        return jwt.decode(
            token,
            settings.TOKEN_SIGNING_KEY,
            algorithms=[_ALGORITHM],
            audience=audience,
            issuer=ISSUER,
            options={"require": ["exp", "aud", "iss", "sub"], "verify_exp": check_expiry},
        )
    except jwt.ExpiredSignatureError as exc:
        raise Unauthenticated("The token has expired.", code=ErrorCode.TOKEN_EXPIRED) from exc
    except jwt.PyJWTError as exc:
        raise Unauthenticated("The token is not valid.", code=ErrorCode.INVALID_TOKEN) from exc


def _b64(raw: bytes) -> bytes:
    return base64.urlsafe_b64encode(raw).rstrip(b"=")


# The header PyJWT writes for our HS256 tokens (and queueing's batch minting too).
OWN_HEADER = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
_OWN_HEADER_STR = OWN_HEADER.decode()


def _verify_own(token: str, *, audience: str, check_expiry: bool) -> dict[str, Any] | None:
    """The hot path for the tokens we mint ourselves: exactly our header, our
    signature, and claims that PyJWT would accept too. It only ever says yes
    (the claims) or "not sure" (None); every "no" and every token in another
    shape is PyJWT's to judge, with its errors. A customer request checks its
    token on every call: this costs a tenth of PyJWT's general path."""
    header, _, rest = token.partition(".")
    payload, _, signature = rest.partition(".")
    if header != _OWN_HEADER_STR or not signature or "." in signature:
        return None
    key = settings.TOKEN_SIGNING_KEY.encode()
    expected = _b64(hmac.new(key, f"{header}.{payload}".encode(), hashlib.sha256).digest())
    if not hmac.compare_digest(expected, signature.encode()):
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, binascii.Error):
        return None
    if not isinstance(claims, dict) or "nbf" in claims:
        return None
    exp, iat, now = claims.get("exp"), claims.get("iat"), time.time()
    ok = (
        claims.get("iss") == ISSUER
        and claims.get("aud") == audience
        and isinstance(claims.get("sub"), str)
        and isinstance(claims.get("jti", ""), str)
        and type(exp) is int
        and (not check_expiry or exp > now)
        and (iat is None or (type(iat) is int and iat <= now))
    )
    return claims if ok else None
