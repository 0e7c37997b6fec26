"""Ticket pages: one ticket with its QR code (printable) and the customer's
tickets (the door's check-in page is the organizer's: console/door.py).

A ticket's page is found by its code alone, like the payment page by its
reference: the code is unguessable (80 random bits) and it is the ticket, so
the page shows nothing its holder does not already hold."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from claims.domain import ticket_code_display, ticket_public_status
from storefront.qr import qr_svg, qr_svg_document
from storefront.sale import not_found_page
from storefront.selectors import issued_ticket_by_code
from storefront.wording import TICKET_TEXT, words


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
