"""Admission tokens: proof that a customer was let out of the waiting room
for one event. Signed (JWT, own audience) and bound to event, customer and
queue entry; the claim step also checks the entry is still ADMITTED, so an
expired or revoked admission stops working even while the signature holds."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from fairqueue.core.tokens import ADMISSION_AUDIENCE, sign, verify
from fairqueue.errors import Forbidden, Unauthenticated


@dataclass(frozen=True)
class Admission:
    event_id: uuid.UUID
    customer_id: uuid.UUID
    queue_entry_id: uuid.UUID
    expires_at: datetime


def admission_token_issue(
    *, event_id: uuid.UUID, customer_id: uuid.UUID, queue_entry_id: uuid.UUID, expires_at: datetime
) -> str:
    ttl = expires_at - datetime.now(UTC)
    token, _ = sign(
        {"sub": str(customer_id), "evt": str(event_id), "qe": str(queue_entry_id)},
        audience=ADMISSION_AUDIENCE,
        ttl=ttl,
    )
    return token


def admission_token_read(*, token: str, event_id: uuid.UUID, customer_id: uuid.UUID) -> Admission:
    """Signature, audience, expiry, event and customer. Whether the entry is
    still admitted is the caller's second check."""
    try:
        claims = verify(token, audience=ADMISSION_AUDIENCE)
    except Unauthenticated as exc:
        if exc.code == "token_expired":
            raise Forbidden("The admission has expired.", code="admission_expired") from exc
        raise
    try:
        admission = Admission(
            event_id=uuid.UUID(claims["evt"]),
            customer_id=uuid.UUID(claims["sub"]),
            queue_entry_id=uuid.UUID(claims["qe"]),
            expires_at=datetime.fromtimestamp(claims["exp"], UTC),
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise Unauthenticated("The admission token is not valid.", code="invalid_token") from exc
    if admission.event_id != uuid.UUID(str(event_id)):
        raise Forbidden("This admission token is for another event.", code="admission_invalid")
    if admission.customer_id != uuid.UUID(str(customer_id)):
        raise Forbidden("This admission token belongs to someone else.", code="admission_invalid")
    return admission
