"""Server-rendered pages for customers using a browser.

The pages render what is public (events, tiers, prices, availability); the
waiting room (storefront/waiting_room.py) runs in the browser against the
JSON API and the queue WebSocket with the customer token kept in
localStorage (see storefront/static/storefront/). Pages never write: every
change goes through the API. Tickets: storefront/ticket_pages.py.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.staticfiles.urls import staticfiles_urlpatterns
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache

from events.selectors import event_public_get, events_public
from fairqueue.errors import NotFound
from fairqueue.money import money_format
from payments.domain import LIVE_STATUSES, PaymentStatus
from payments.services import payment_check_on_return
from storefront.sale import duration_text, event_tiers, not_found_page, sale_state
from storefront.ticket_pages import my_tickets_page, ticket_page, ticket_qr_svg
from storefront.waiting_room import waiting_room_page
from storefront.wording import payment_words


def event_list_page(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    rows: list[dict[str, Any]] = []
    for event in events_public()[:200]:
        prices = [tier.price for tier in event.tiers.all()]
        rows.append(
            {
                "event": event,
                "state": sale_state(event, now),
                "price_from": money_format(min(prices), event.currency) if prices else None,
                "one_price": len(set(prices)) == 1,
            }
        )
    # Sales still to come or running first; ended ones after them (each in date order).
    rows.sort(key=lambda row: row["state"].key == "ended")
    return render(request, "events/list.html", {"rows": rows})


def event_page(request: HttpRequest, event_id: str) -> HttpResponse:
    try:
        event = event_public_get(event_id=event_id)
    except NotFound:
        return not_found_page(request, "There is no such event, or it is not on sale yet.")
    state = sale_state(event, timezone.now())
    context = {
        "event": event,
        "state": state,
        "tiers": event_tiers(event),
        "admission_window": duration_text(event.admission_window_seconds),
    }
    return render(request, "events/detail.html", context)


def signin_page(request: HttpRequest) -> HttpResponse:
    """The code is asked for and checked by the API; the page only says where
    to go afterwards (a path on this site, never another one)."""
    next_url = request.GET.get("next") or "/"
    if not url_has_allowed_host_and_scheme(
        next_url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ) or not next_url.startswith("/"):
        next_url = "/"
    # Development's console backend prints the code where the server runs.
    in_terminal = settings.EMAIL_BACKEND == "django.core.mail.backends.console.EmailBackend"
    return render(
        request,
        "account/signin.html",
        {
            "config": {"api": "/api/v1/", "next": next_url, "codes_in_terminal": in_terminal},
            "codes_in_terminal": in_terminal,
        },
    )


@never_cache
def payment_return_page(request: HttpRequest) -> HttpResponse:
    """The gateway appends ``?reference=``. The page shows the payment's
    status and nothing else: a reference travels through logs, exports,
    receipts, proxies and browser history, so it opens nothing. The tickets
    come with the customer's sign-in (My tickets, the waiting room). The
    gateway is asked at once (a decline sends no webhook); the page
    refreshes itself while pending. Once paid, its script shows the
    tickets (codes, seats, total) to the buyer signed in on this browser."""
    reference = (request.GET.get("reference") or request.GET.get("trxref") or "")[:64]
    payment = payment_check_on_return(reference=reference) if reference else None
    # Once paid, the page's script shows the tickets to the buyer signed in
    # (their token, GET events/{id}/me/): the ids below open nothing alone.
    config = None
    if payment is not None and payment.status == PaymentStatus.CONFIRMED:
        config = {
            "api": "/api/v1/",
            "event_id": str(payment.claim.event_id),
            "claim_id": str(payment.claim_id),
        }
    return render(
        request,
        "payments/return.html",
        {
            "payment": payment,
            "pending": payment is not None and payment.status in LIVE_STATUSES,
            "status_text": payment_words(payment) if payment else "",
            "config": config,
        },
        status=200 if payment is not None else 404,
    )


urlpatterns = [
    path("", event_list_page, name="event-list-page"),
    path("events/<uuid:event_id>/", event_page, name="event-page"),
    path("events/<uuid:event_id>/queue/", waiting_room_page, name="waiting-room-page"),
    path("tickets/", my_tickets_page, name="my-tickets-page"),
    path("tickets/<str:code>/", ticket_page, name="ticket-page"),
    path("tickets/<str:code>/qr.svg", ticket_qr_svg, name="ticket-qr"),
    path("signin/", signin_page, name="signin-page"),
    path("payments/return/", payment_return_page, name="payment-return-page"),
    # DEBUG only (empty otherwise): static files under `make run`, where
    # granian has no nginx in front; docker compose's nginx serves them.
    *staticfiles_urlpatterns(),
]
