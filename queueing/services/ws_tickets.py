"""Tickets for the queue WebSocket (queueing/ws_tickets.py says why)."""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass

from django.conf import settings

from fairqueue.errors import ErrorCode, NotFound
from queueing.selectors import event_snapshot
from queueing.ws_tickets import ws_ticket_store

TICKET_BYTES = 32


@dataclass(frozen=True)
class WsTicket:
    ticket: str
    expires_in: int  # seconds


def ws_ticket_issue(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> WsTicket:
    """A fresh single-use ticket for this customer and event (404
    ``event_not_found`` for an unknown event)."""
    if event_snapshot(event_id=event_id) is None:
        raise NotFound("No such event.", code=ErrorCode.EVENT_NOT_FOUND)
    ttl = settings.WS_TICKET_TTL_SECONDS
    ticket = secrets.token_urlsafe(TICKET_BYTES)
    ws_ticket_store().put(event_id=event_id, ticket=ticket, customer_id=customer_id, ttl_s=ttl)
    return WsTicket(ticket=ticket, expires_in=ttl)


def ws_ticket_redeem(*, event_id: uuid.UUID | str, ticket: str) -> uuid.UUID | None:
    """The customer the ticket was issued to, once; None for a ticket that
    is unknown, used, expired or for another event."""
    if not ticket or len(ticket) > 128:
        return None
    customer_id = ws_ticket_store().take(event_id=event_id, ticket=ticket)
    return uuid.UUID(customer_id) if customer_id else None
