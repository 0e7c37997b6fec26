"""The append-only log of issued tickets: every return, withdrawal, resale,
refund, transfer and void of a ticket is one row (``TicketEvent``)."""

from __future__ import annotations

import uuid
from typing import Any

from claims.models import TicketEvent


def ticket_log(
    *, ticket_id: uuid.UUID | str, kind: str, actor: str, data: dict[str, Any] | None = None
) -> None:
    TicketEvent.objects.create(ticket_id=ticket_id, kind=kind, actor=actor[:150], data=data or {})
