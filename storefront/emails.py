"""The buyer's emails: the confirmation (HTML and plain text, the tickets,
each with its QR code as an inline image, and a receipt), the cancellation
of a paid purchase (its tickets void, its money going back), and the
plain-text notes of a returned ticket resold or back with its holder when
returns closed, and of a ticket sent to someone."""

from __future__ import annotations

from email.mime.image import MIMEImage
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage, EmailMultiAlternatives
from django.template.loader import render_to_string

from claims.domain import IssuedTicketStatus, ticket_code_display
from claims.models import Claim, IssuedTicket, TicketReturn, TicketTransfer
from fairqueue.money import money_format
from fairqueue.public_url import public_url
from storefront.qr import qr_png
from storefront.selectors import payment_confirmed_for_claim


def confirmation_email(*, claim: Claim) -> EmailMultiAlternatives | None:
    """The message for a CONFIRMED claim's valid tickets; None when there is
    nothing to send (no valid ticket left, e.g. refunded meanwhile)."""
    tickets = [
        t
        for t in claim.issued_tickets.select_related("tier").order_by("seat")
        if t.status == IssuedTicketStatus.VALID
    ]
    if not tickets:
        return None
    event = claim.event
    payment = payment_confirmed_for_claim(claim_id=claim.pk)
    unit = claim.amount // claim.quantity if claim.quantity else claim.amount
    context = {
        "event": event,
        "claim": claim,
        "tier_name": claim.tier.name,
        "tickets": [
            {
                "code": ticket_code_display(t.code),
                "seat": t.seat,
                "seat_label": t.seat_label,
                "cid": f"qr-{t.code}",
                "url": public_url(f"/tickets/{t.code}/"),
            }
            for t in tickets
        ],
        "unit_price": money_format(unit, claim.currency),
        "total": money_format(claim.amount, claim.currency),
        "reference": payment.reference if payment else "",
        "paid_at": (payment.confirmed_at if payment else None) or claim.confirmed_at,
        "my_tickets_url": public_url("/tickets/"),
        "event_url": public_url(f"/events/{event.pk}/"),
    }
    message = _message(
        "confirmation", "Your tickets for", context, to=tickets[0].holder_email
    )
    # multipart/related: the HTML shows each QR code by its Content-ID.
    message.mixed_subtype = "related"  # type: ignore[attr-defined]  # EmailMessage's; not in the stubs
    for ticket in tickets:
        image = MIMEImage(qr_png(ticket.code), "png")
        image.add_header("Content-ID", f"<qr-{ticket.code}>")
        image.add_header("Content-Disposition", "inline", filename=f"ticket-{ticket.seat}.png")
        message.attach(image)
    return message


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _note(subject: str, lines: list[str], *, to: str) -> EmailMessage:
    """A plain-text note: its lines, and one subject line whatever names it
    holds."""
    return EmailMessage(
        subject=_one_line(subject),
        body="\n".join(lines) + "\n",
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[to],
    )


def _seat(ticket: IssuedTicket) -> str:
    return f" (seat {ticket.seat_label})" if ticket.seat_label else ""


def resold_email(*, ticket_return: TicketReturn) -> EmailMessage:
    """To the first buyer of a resold ticket: its code is void, and what
    comes back to their card."""
    ticket = ticket_return.ticket
    event = ticket.event
    refund = money_format(ticket_return.refund_amount, ticket_return.currency)
    fee = money_format(ticket_return.fee, ticket_return.currency)
    lines = [
        f"Someone bought the ticket you returned for {event.name}{_seat(ticket)}.",
        f"Its code {ticket_code_display(ticket.code)} no longer lets anyone in.",
        f"We are refunding {refund} to the card you paid with"
        + (f" (face value minus the organizer's {fee} fee)" if ticket_return.fee else "")
        + ": banks usually show it within a few working days.",
        "",
        f"Your tickets: {public_url('/tickets/')}",
    ]
    return _note(f"Your returned ticket for {event.name} was resold", lines, to=ticket.holder_email)


def return_closed_email(*, ticket_return: TicketReturn) -> EmailMessage:
    """To the holder of a ticket nobody bought before returns closed: it is
    theirs and valid again, nothing is refunded."""
    ticket = ticket_return.ticket
    event = ticket.event
    lines = [
        f"Nobody bought the ticket you returned for {event.name}{_seat(ticket)}"
        " before returns closed.",
        f"It is yours again and valid: its code {ticket_code_display(ticket.code)} lets you in.",
        "Nothing is refunded.",
        "",
        f"Your tickets: {public_url('/tickets/')}",
    ]
    return _note(
        f"Your returned ticket for {event.name} is yours again", lines, to=ticket.holder_email
    )


def transfer_email(*, transfer: TicketTransfer) -> EmailMessage:
    """To the person a ticket was sent to: how to accept it."""
    ticket = transfer.ticket
    lines = [
        f"{ticket.holder_email} sent you a ticket for {ticket.event.name}{_seat(ticket)}.",
        "Sign in with this email address and accept it on your tickets page:",
        public_url("/tickets/"),
        "",
        "Once you accept, the ticket gets a new code that is yours alone.",
    ]
    return _note(f"A ticket for {ticket.event.name} was sent to you", lines, to=transfer.to_email)


def offer_email(*, event_name: str, event_id: object, to: str, expires_at: str) -> EmailMessage:
    """A waiting-list offer: a ticket is the customer's to claim and pay
    before ``expires_at`` (ISO 8601, UTC), on the event's page."""
    context = {
        "event_name": " ".join(event_name.split()),
        "expires_at": expires_at,
        "event_url": public_url(f"/events/{event_id}/"),
    }
    return EmailMessage(
        subject="A ticket for " + context["event_name"] + " is yours to claim",
        body=render_to_string("emails/offer.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[to],
    )


def cancellation_email(*, claim: Claim, reason: str) -> EmailMultiAlternatives | None:
    """The message for a paid claim whose tickets were voided (``reason``:
    ``refunded``, or ``staff``); None when it had no issued ticket."""
    tickets = list(claim.issued_tickets.select_related("tier").order_by("seat"))
    if not tickets:
        return None
    event = claim.event
    context = {
        "event": event,
        "claim": claim,
        "tier_name": claim.tier.name,
        "refunded": reason == "refunded",
        "codes": [ticket_code_display(t.code) for t in tickets],
        "total": money_format(claim.amount, claim.currency),
        "my_tickets_url": public_url("/tickets/"),
    }
    return _message(
        "cancellation", "Cancelled: your tickets for", context, to=tickets[0].holder_email
    )


def _message(
    template: str, subject: str, context: dict[str, Any], *, to: str
) -> EmailMultiAlternatives:
    """``emails/<template>.txt`` with its ``.html`` alternative, about the
    context's event. One subject line whatever the event's name holds: a
    header with CR/LF is refused by Django (no message at all)."""
    context = {**context, "subject": subject + " " + " ".join(context["event"].name.split())}
    message = EmailMultiAlternatives(
        subject=context["subject"],
        body=render_to_string(f"emails/{template}.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[to],
    )
    message.attach_alternative(render_to_string(f"emails/{template}.html", context), "text/html")
    return message
