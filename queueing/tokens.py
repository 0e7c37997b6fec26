"""Admission tokens: proof that a customer was let out of the waiting room
for one event. Signed (JWT, own audience) and bound to event, customer and
queue entry; the claim step also checks the entry is still ADMITTED, so an
expired or revoked admission stops working even while the signature holds."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings

from fairqueue.errors import ErrorCode, Forbidden, InvalidInput, Unauthenticated
from fairqueue.tokens import ISSUER, OWN_HEADER, sign, verify

ADMISSION_AUDIENCE = "fairqueue:admission"


@dataclass(frozen=True)
class Admission:
    event_id: uuid.UUID
    customer_id: uuid.UUID
    queue_entry_id: uuid.UUID
    expires_at: datetime
    # A waiting-list offer: good for one ticket of this tier only.
    tier_id: uuid.UUID | None = None


# How many tickets an offer's admission may claim.
OFFER_QUANTITY = 1


def admission_token_issue(
    *,
    event_id: uuid.UUID,
    customer_id: uuid.UUID,
    queue_entry_id: uuid.UUID,
    expires_at: datetime,
    offer_tier_id: uuid.UUID | None = None,
) -> str:
    """One admission token; ``offer_tier_id`` for the admission of a
    waiting-list offer (the queue entry's ``offer_tier``)."""
    ttl = expires_at - datetime.now(UTC)
    claims = {"sub": str(customer_id), "evt": str(event_id), "qe": str(queue_entry_id)}
    if offer_tier_id is not None:
        claims["tier"] = str(offer_tier_id)
    token, _ = sign(claims, audience=ADMISSION_AUDIENCE, ttl=ttl)
    return token


def _b64(raw: bytes) -> bytes:
    return base64.urlsafe_b64encode(raw).rstrip(b"=")


_HEADER = OWN_HEADER


def admission_tokens_issue(
    *,
    event_id: uuid.UUID,
    expires_at: datetime,
    entries: Iterable[tuple[uuid.UUID, uuid.UUID]],
) -> list[str]:
    """The tokens of one admission tick: the same JWTs (HS256, same claims,
    same key) as ``admission_token_issue``, for many (queue entry id, customer
    id) pairs at once. The header and the claims they share are encoded once,
    each token costs one HMAC, so a batch of 5,000 takes milliseconds rather
    than the quarter second PyJWT's general path needs."""
    key = settings.TOKEN_SIGNING_KEY.encode()
    shared = json.dumps(
        {
            "evt": str(event_id),
            "iss": ISSUER,
            "aud": ADMISSION_AUDIENCE,
            "iat": int(time.time()),
            "exp": int(expires_at.timestamp()),
        },
        separators=(",", ":"),
    )[1:]
    tokens = []
    for entry_id, customer_id in entries:
        payload = f'{{"sub":"{customer_id}","qe":"{entry_id}",{shared}'
        signing_input = _HEADER + b"." + _b64(payload.encode())
        signature = _b64(hmac.new(key, signing_input, hashlib.sha256).digest())
        tokens.append((signing_input + b"." + signature).decode())
    return tokens


def admission_token_read(
    *, token: str, event_id: uuid.UUID | str, customer_id: uuid.UUID | str
) -> Admission:
    """Signature, audience, event and customer. Whether the entry is still
    admitted, its window still open, is the caller's second check, and the
    authority: the token's ``exp`` is when the window was due to end when it
    was minted, and the admission clock may since have kept it open or given
    it time back (queueing/services/clock.py)."""
    claims = verify(token, audience=ADMISSION_AUDIENCE, check_expiry=False)
    try:
        admission = Admission(
            event_id=uuid.UUID(claims["evt"]),
            customer_id=uuid.UUID(claims["sub"]),
            queue_entry_id=uuid.UUID(claims["qe"]),
            expires_at=datetime.fromtimestamp(claims["exp"], UTC),
            tier_id=uuid.UUID(claims["tier"]) if "tier" in claims else None,
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise Unauthenticated(
            "The admission token is not valid.", code=ErrorCode.INVALID_TOKEN
        ) from exc
    if admission.event_id != uuid.UUID(str(event_id)):
        raise Forbidden(
            "This admission token is for another event.", code=ErrorCode.ADMISSION_INVALID
        )
    if admission.customer_id != uuid.UUID(str(customer_id)):
        raise Forbidden(
            "This admission token belongs to someone else.", code=ErrorCode.ADMISSION_INVALID
        )
    return admission


def admission_scope_check(
    admission: Admission, *, tier_id: uuid.UUID | str, quantity: int
) -> None:
    """An offer's admission claims one ticket of the tier it was offered, so
    that offers never hand out more than the tickets that freed up: another
    tier is 403 admission_invalid, more than one ticket 422 invalid_quantity.
    An admission from the line may claim any tier."""
    if admission.tier_id is None:
        return
    if admission.tier_id != uuid.UUID(str(tier_id)):
        raise Forbidden(
            "This offer is for another tier.",
            code=ErrorCode.ADMISSION_INVALID,
            details={"tier_id": str(admission.tier_id)},
        )
    if quantity > OFFER_QUANTITY:
        raise InvalidInput(
            f"An offer from the waiting list is for {OFFER_QUANTITY} ticket.",
            code=ErrorCode.INVALID_QUANTITY,
            details={"quantity": quantity, "max": OFFER_QUANTITY},
        )
