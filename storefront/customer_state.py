"""The customer's own state for one event (``GET events/{id}/me/``) and their
tickets (``GET me/tickets/``): one read that lets a page rebuild itself after
a refresh, in a new tab or on another device."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.urls import reverse
from django.utils import timezone

from claims.domain import (
    ClaimSource,
    ReturnStatus,
    TransferStatus,
    ticket_code_display,
    ticket_public_status,
    transfers_left,
)
from claims.models import Claim, IssuedTicket, TicketReturn, TicketTransfer
from customers.emails import email_canonical
from customers.models import Customer
from fairqueue.errors import ErrorCode, NotFound
from payments.models import Refund
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

# The statuses whose return (and resale refund) the customer sees.
RESALE_SHOWN = ("on_resale", "resold")


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
        **position_body(result, event_id=event_id, customer_id=customer_id),
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
    return ticket_bodies([ticket], with_event=with_event)[0]


def ticket_bodies(
    tickets: Iterable[IssuedTicket], *, with_event: bool = False
) -> list[dict[str, Any]]:
    """Each ticket as the customer reads it, in a fixed number of queries
    however many there are (their event, tier and claim selected with them)."""
    tickets = list(tickets)
    statuses = [ticket_public_status(t.status, t.void_reason) for t in tickets]
    moves = _Moves.of(tickets, statuses)
    bodies = []
    for ticket, status in zip(tickets, statuses, strict=True):
        body: dict[str, Any] = {
            "ticket_id": str(ticket.pk),
            "code": ticket_code_display(ticket.code),
            "status": status,
            "status_text": words(TICKET_TEXT, status),
            "event_id": str(ticket.event_id),
            "tier_name": ticket.tier.name,
            "seat": ticket.seat,
            "seat_label": ticket.seat_label,
            "holder_email": ticket.holder_email,
            "issued_at": ticket.issued_at.isoformat(),
            "checked_in_at": ticket.checked_in_at.isoformat() if ticket.checked_in_at else None,
            "url": reverse("ticket-page", args=[ticket.code]),
        }
        body.update(moves.of_ticket(ticket, status))
        if with_event:
            event = ticket.event
            body["event_name"] = event.name
            body["venue"] = event.venue
            body["starts_at"] = event.starts_at.isoformat() if event.starts_at else None
        bodies.append(body)
    return bodies


@dataclass(frozen=True)
class _Moves:
    """The returns, resale refunds and pending transfers of some tickets,
    read in one query each."""

    returns: dict[uuid.UUID, TicketReturn]  # the latest not withdrawn, per ticket
    refunds: dict[uuid.UUID, Refund]
    pending: dict[uuid.UUID, TicketTransfer]  # per ticket

    @classmethod
    def of(cls, tickets: list[IssuedTicket], statuses: list[str]) -> _Moves:
        on_resale = [t.pk for t, s in zip(tickets, statuses, strict=True) if s in RESALE_SHOWN]
        valid = [t.pk for t, s in zip(tickets, statuses, strict=True) if s == "valid"]
        returns = {}
        if on_resale:
            latest = (
                TicketReturn.objects.filter(ticket_id__in=on_resale)
                .exclude(status=ReturnStatus.WITHDRAWN)
                .order_by("ticket_id", "-created_at")
                .distinct("ticket_id")
            )
            returns = {ret.ticket_id: ret for ret in latest}
        refund_ids = [
            r.refund_id for r in returns.values() if r.status == ReturnStatus.RESOLD and r.refund_id
        ]
        pending = TicketTransfer.objects.filter(ticket_id__in=valid, status=TransferStatus.PENDING)
        return cls(
            returns=returns,
            refunds=Refund.objects.in_bulk(refund_ids) if refund_ids else {},
            pending={t.ticket_id: t for t in pending} if valid else {},
        )

    def of_ticket(self, ticket: IssuedTicket, status: str) -> dict[str, Any]:
        """Its return (and, once resold, the refund it brought), the transfer
        pending on it, and what the holder may do with it now."""
        ret = self.returns.get(ticket.pk) if status in RESALE_SHOWN else None
        resale = None
        if ret is not None:
            resale = {
                "return_id": str(ret.pk),
                "status": ret.status.lower(),
                "refund_amount": ret.refund_amount,
                "fee": ret.fee,
                "currency": ret.currency,
            }
        refund = None
        if ret is not None and ret.status == ReturnStatus.RESOLD:
            row = self.refunds.get(ret.refund_id) if ret.refund_id else None
            refund = {
                "amount": ret.refund_amount,
                "currency": ret.currency,
                # due: opened within moments of the resale; then the gateway's progress.
                "status": row.status.lower() if row else "due",
                "settled_at": row.settled_at.isoformat() if row and row.settled_at else None,
            }
        pending = self.pending.get(ticket.pk) if status == "valid" else None
        event = ticket.event
        now = timezone.now()
        refusal = return_refusal(ticket, now) if status == "valid" and pending is None else ""
        return {
            "resale": resale,
            "refund": refund,
            "transfer": (
                {"transfer_id": str(pending.pk), "to_email": pending.to_email} if pending else None
            ),
            "can_return": status == "valid" and pending is None and not refusal,
            "return_refusal": refusal,
            "can_transfer": status == "valid"
            and pending is None
            and transfers_left(
                allowed=event.transfers_allowed, limit=event.transfer_limit, done=ticket.transfers
            ),
        }


# Why a valid ticket cannot be returned for resale, as its holder reads it.
RECEIVED_NOT_RETURNABLE = (
    "You were sent this ticket, so it cannot be returned for a refund: you paid nothing for it."
)


def return_refusal(ticket: IssuedTicket, now: datetime) -> str:
    """Empty when its holder may return this valid ticket now; else why not
    (a ticket received by transfer, returns not offered or closed)."""
    event = ticket.event
    if ticket.claim.source != ClaimSource.SALE:
        if transfers_left(
            allowed=event.transfers_allowed, limit=event.transfer_limit, done=ticket.transfers
        ):
            return RECEIVED_NOT_RETURNABLE + " You can send it on to someone instead."
        return RECEIVED_NOT_RETURNABLE
    if event.returns_until is None:
        return "This event takes no returns."
    if event.returns_until <= now:
        return "Returns for this event are closed."
    return ""


def transfers_for_customer(*, customer_id: uuid.UUID | str) -> list[dict[str, Any]]:
    """Tickets sent to this customer's address, not accepted yet."""
    customer = Customer.objects.get(pk=customer_id)
    pending = TicketTransfer.objects.filter(
        status=TransferStatus.PENDING, to_canonical=email_canonical(customer.email)
    ).select_related("ticket__event", "ticket__tier", "sender")
    return [
        {
            "transfer_id": str(t.pk),
            "from_email": t.sender.email,
            "event_id": str(t.event_id),
            "event_name": t.ticket.event.name,
            "tier_name": t.ticket.tier.name,
            "seat_label": t.ticket.seat_label,
            "created_at": t.created_at.isoformat(),
        }
        for t in pending.order_by("created_at")
    ]


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
        "tickets": ticket_bodies(tickets),
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
    """Every ticket ever issued to them, newest first."""
    return ticket_bodies(issued_tickets_for_customer(customer_id=customer_id), with_event=True)
