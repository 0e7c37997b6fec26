"""The buyer's emails: the confirmation (HTML and plain text, the tickets,
each with its QR code as an inline image, and a receipt), the cancellation
of a paid purchase (its tickets void, its money going back), a ticket sent
to someone (HTML and plain text), and the plain-text notes of a returned
ticket resold or back with its holder when returns closed."""

from __future__ import annotations

from email.mime.image import MIMEImage
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage, EmailMultiAlternatives
from django.template.loader import render_to_string

from claims.domain import VoidReason, ticket_code_display
from claims.models import Claim, IssuedTicket, TicketReturn, TicketTransfer
from fairqueue.money import money_format
from fairqueue.public_url import public_url
from payments.domain import RefundStatus
from payments.models import Refund
from storefront.qr import qr_png
from storefront.selectors import Confirmation


def confirmation_email(confirmation: Confirmation) -> EmailMultiAlternatives | None:
    """The message for a CONFIRMED claim's valid tickets; None when there is
    nothing to send (no valid ticket left, e.g. refunded meanwhile)."""
    c = confirmation
    tickets = c.tickets
    if not tickets:
        return None
    unit = c.amount // c.quantity if c.quantity else c.amount
    context = {
        "event": {"name": c.event_name, "venue": c.venue, "starts_at": c.starts_at},
        "claim": {"quantity": c.quantity},
        "tier_name": c.tier_name,
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
        "unit_price": money_format(unit, c.currency),
        "total": money_format(c.amount, c.currency),
        "reference": c.reference or "",
        "paid_at": c.paid_at or c.confirmed_at,
        "my_tickets_url": public_url("/tickets/"),
        "event_url": public_url(f"/events/{c.event_id}/"),
    }
    message = _message(
        "confirmation", "Your tickets for", c.event_name, context, to=tickets[0].holder_email
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


def transfer_email(*, transfer: TicketTransfer) -> EmailMultiAlternatives:
    """To the person a ticket was sent to (HTML and text, like the
    confirmation): who sent it, its tier and seat, the show, how to accept
    it and by when (before the show starts: until then it is the sender's)."""
    ticket = transfer.ticket
    event = ticket.event
    context = {
        "event": event,
        "sender": ticket.holder_email,
        "to_email": transfer.to_email,
        "tier_name": ticket.tier.name,
        "seat_label": ticket.seat_label,
        "my_tickets_url": public_url("/tickets/"),
    }
    return _message("transfer", "A ticket was sent to you for", event.name, context,
                    to=transfer.to_email)  # fmt: skip


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
    ``refunded``, or ``staff``); None when it had no issued ticket. It
    names the codes the cancellation voided (not those resold or sent on
    before) and what the refund that cancelled it gives back."""
    tickets = list(
        claim.issued_tickets.select_related("tier")
        .exclude(void_reason__in=[VoidReason.RESOLD, VoidReason.TRANSFERRED])
        .order_by("seat")
    )
    if not tickets:
        return None
    event = claim.event
    refund = (
        Refund.objects.filter(payment__claim_id=claim.pk, for_resale=False)
        .exclude(status=RefundStatus.FAILED)
        .order_by("-created_at")
        .first()
    )
    given_back = refund.amount if refund is not None else claim.amount
    context = {
        "event": event,
        "claim": claim,
        "tier_name": claim.tier.name,
        "refunded": reason == "refunded",
        "codes": [ticket_code_display(t.code) for t in tickets],
        "total": money_format(given_back, claim.currency),
        "my_tickets_url": public_url("/tickets/"),
    }
    return _message(
        "cancellation",
        "Cancelled: your tickets for",
        event.name,
        context,
        to=tickets[0].holder_email,
    )


def _message(
    template: str, subject: str, event_name: str, context: dict[str, Any], *, to: str
) -> EmailMultiAlternatives:
    """``emails/<template>.txt`` with its ``.html`` alternative, about the
    event ``event_name``. One subject line whatever the event's name holds:
    a header with CR/LF is refused by Django (no message at all)."""
    context = {**context, "subject": subject + " " + " ".join(event_name.split())}
    message = EmailMultiAlternatives(
        subject=context["subject"],
        body=render_to_string(f"emails/{template}.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[to],
    )
    message.attach_alternative(render_to_string(f"emails/{template}.html", context), "text/html")
    return message
