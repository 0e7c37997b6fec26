"""Ticket pages: one ticket with its QR code (printable), the customer's
tickets, and the door's check-in page for organizers.

A ticket's page is found by its code alone, like the payment page by its
reference: the code is unguessable (80 random bits) and it is the ticket, so
the page shows nothing its holder does not already hold."""

from __future__ import annotations

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from claims.domain import ticket_code_display, ticket_public_status
from events.authentication import runs_event
from events.models import Event
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


def check_in_page(request: HttpRequest, event_id: str) -> HttpResponse:
    """The door: for members of the event's organizer, signed in to the
    admin. The page posts codes to the check-in API with this session."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    event = Event.objects.filter(pk=event_id).first()
    if event is None or not runs_event(request, event.pk):
        return not_found_page(request, "There is no such event among the events you run.")
    config = {"api": "/api/v1/", "event_id": str(event.pk), "csrf_token": get_token(request)}
    return render(request, "tickets/check_in.html", {"event": event, "config": config})
