"""The customer's own state for one event (``GET events/{id}/me/``) and their
tickets (``GET me/tickets/``): one read that lets a page rebuild itself after
a refresh, in a new tab or on another device."""

from __future__ import annotations

import uuid
from typing import Any

from django.urls import reverse

from claims.domain import ticket_code_display
from claims.models import Claim, IssuedTicket
from fairqueue.errors import ErrorCode, NotFound
from queueing.selectors import entry_latest
from queueing.serializers import position_body
from queueing.services import queue_position
from storefront.selectors import (
    claim_latest_for_customer,
    claims_held_by_customer,
    issued_tickets_for_customer,
    payment_latest_for_claim,
)
from storefront.wording import CLAIM_TEXT, RELEASE_TEXT, TICKET_TEXT, payment_words, words


def _queue(event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> dict[str, Any] | None:
    try:
        result = queue_position(event_id=event_id, customer_id=customer_id)
    except NotFound as exc:
        if exc.code == ErrorCode.NOT_IN_QUEUE:
            return None
        raise
    entry = entry_latest(event_id=event_id, customer_id=customer_id)
    return {
        "queue_entry_id": str(entry.pk) if entry else None,
        "joined_at": entry.joined_at.isoformat() if entry else None,
        **position_body(result),
    }


def _claim(claim: Claim) -> dict[str, Any]:
    return {
        "claim_id": str(claim.pk),
        "status": claim.status,
        "status_text": words(CLAIM_TEXT, claim.status),
        "tier_id": str(claim.tier_id),
        "tier_name": claim.tier.name,
        "quantity": claim.quantity,
        "seats": list(claim.seats),
        "amount": claim.amount,
        "currency": claim.currency,
        "expires_at": claim.expires_at.isoformat(),
        "release_reason": claim.release_reason or None,
        "release_text": words(RELEASE_TEXT, claim.release_reason),
    }


def _payment(claim: Claim) -> dict[str, Any] | None:
    payment = payment_latest_for_claim(claim_id=claim.pk)
    if payment is None:
        return None
    return {
        "payment_id": str(payment.pk),
        "status": payment.status,
        "status_text": payment_words(payment),
        "reference": payment.reference,
        "authorization_url": payment.authorization_url or None,
        "amount": payment.amount,
        "currency": payment.currency,
    }


def ticket_body(ticket: IssuedTicket, *, with_event: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "ticket_id": str(ticket.pk),
        "code": ticket_code_display(ticket.code),
        "status": ticket.status,
        "status_text": words(TICKET_TEXT, ticket.status),
        "event_id": str(ticket.event_id),
        "tier_name": ticket.tier.name,
        "seat": ticket.seat,
        "seat_label": ticket.seat_label,
        "holder_email": ticket.holder_email,
        "issued_at": ticket.issued_at.isoformat(),
        "checked_in_at": ticket.checked_in_at.isoformat() if ticket.checked_in_at else None,
        "url": reverse("ticket-page", args=[ticket.code]),
    }
    if with_event:
        event = ticket.event
        body["event_name"] = event.name
        body["venue"] = event.venue
        body["starts_at"] = event.starts_at.isoformat() if event.starts_at else None
    return body


def customer_event_state(
    *, event_id: uuid.UUID | str, customer_id: uuid.UUID | str
) -> dict[str, Any]:
    """Queue entry (with its admission token while admitted), the claim that
    holds tickets (else the latest one), its latest payment, and the tickets
    issued for this event."""
    claim = claim_latest_for_customer(event_id=event_id, customer_id=customer_id)
    tickets = issued_tickets_for_customer(customer_id=customer_id, event_id=event_id)
    return {
        "event_id": str(event_id),
        "queue": _queue(event_id, customer_id),
        "claim": _claim(claim) if claim else None,
        "payment": _payment(claim) if claim else None,
        # Every ticket ever issued to them for the event: a cancelled one
        # stays listed (as cancelled) so a refunded buyer sees what happened.
        "tickets": [ticket_body(t) for t in tickets],
    }


def customer_holds(*, customer_id: uuid.UUID | str) -> list[dict[str, Any]]:
    """Tickets held unpaid, for the bar every page shows while a hold runs."""
    return [
        {
            "claim_id": str(claim.pk),
            "event_id": str(claim.event_id),
            "event_name": claim.event.name,
            "quantity": claim.quantity,
            "expires_at": claim.expires_at.isoformat(),
            "paying": claim.payment_in_flight,
            "url": reverse("waiting-room-page", args=[claim.event_id]),
        }
        for claim in claims_held_by_customer(customer_id=customer_id)[:10]
    ]


def customer_tickets(*, customer_id: uuid.UUID | str) -> list[dict[str, Any]]:
    return [
        ticket_body(t, with_event=True)
        for t in issued_tickets_for_customer(customer_id=customer_id)
    ]
