"""Ticket pages: one ticket with its QR code (printable) and the customer's
tickets (the door's check-in page is the organizer's: console/door.py).

A ticket's page is found by its code alone, like the payment page by its
reference: the code is unguessable (80 random bits) and it is the ticket, so
the page shows nothing its holder does not already hold. Its purchase's
money is shown in words, the same figures as the claim's API answer; a
ticket received by transfer has none."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from claims.domain import ClaimSource, ticket_code_display, ticket_public_status
from claims.models import Claim
from claims.services import face_value
from fairqueue.money import money_format
from ledger.selectors import account_money, account_refunds
from storefront.qr import qr_svg, qr_svg_document
from storefront.sale import not_found_page
from storefront.selectors import issued_ticket_by_code
from storefront.wording import TICKET_TEXT, words

REFUND_WORDS = {
    "pending": "on its way",
    "processed": "paid back",
    "failed": "failed: our staff are on it",
}


def purchase_money(claim: Claim) -> dict[str, Any] | None:
    """The purchase's money in words: only the figures that are not zero,
    and each refund. None for a purchase made by a transfer (nothing paid)."""
    if claim.source == ClaimSource.TRANSFER:
        return None
    money = account_money(claim_id=claim.pk, face=face_value(claim))
    figures = (
        ("Paid", money.paid),
        ("Refunded", money.refunded),
        ("Refund on its way", money.refund_pending),
        ("Kept as a fee", money.fee_kept),
    )
    lines = [(label, money_format(amount, claim.currency)) for label, amount in figures if amount]
    refunds = [
        {
            "amount": money_format(refund.amount, claim.currency),
            "status": REFUND_WORDS.get(refund.status, "being processed"),
            "at": refund.created_at,
        }
        for refund in account_refunds(claim_id=claim.pk)
    ]
    if not lines and not refunds:
        return None
    return {"lines": lines, "refunds": refunds}


@never_cache
def ticket_page(request: HttpRequest, code: str) -> HttpResponse:
    ticket = issued_ticket_by_code(code=code)
    if ticket is None:
        return not_found_page(request, "There is no ticket with this code.")
    context = {
        "ticket": ticket,
        "event": ticket.event,
        "code": ticket_code_display(ticket.code),
        "status_text": words(TICKET_TEXT, ticket_public_status(ticket.status, ticket.void_reason)),
        "qr": qr_svg(ticket.code),
        "of": ticket.claim.quantity,
        "money": purchase_money(ticket.claim),
    }
    return render(request, "tickets/ticket.html", context)


@never_cache
def ticket_qr_svg(request: HttpRequest, code: str) -> HttpResponse:
    ticket = issued_ticket_by_code(code=code)
    if ticket is None:
        return HttpResponse(status=404)
    return HttpResponse(qr_svg_document(ticket.code), content_type="image/svg+xml")


def my_tickets_page(request: HttpRequest) -> HttpResponse:
    """A shell: storefront/static/storefront/tickets.js fills it from
    ``GET me/tickets/`` with the customer token."""
    return render(request, "tickets/mine.html", {"config": {"api": "/api/v1/"}})
