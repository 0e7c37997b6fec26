"""Server-rendered pages for customers using a browser.

The pages render what is public (events, tiers, prices, availability); the
waiting room itself runs in the browser against the JSON API and the queue
WebSocket with the customer token kept in sessionStorage (see
storefront/static/storefront/). They never write: every change goes through the API.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.contrib.staticfiles.urls import staticfiles_urlpatterns
from django.http import HttpRequest, HttpResponse
from django.http.request import split_domain_port
from django.shortcuts import render
from django.urls import path, reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme

from events.domain import EventStatus, in_prequeue
from events.models import Event
from events.selectors import event_public_get, events_public
from fairqueue.errors import NotFound
from fairqueue.money import money_format
from payments.domain import LIVE_STATUSES
from payments.services import payment_check_on_return
from storefront.selectors import event_available


@dataclass(frozen=True)
class SaleState:
    key: str  # upcoming | prequeue | on_sale | paused | sold_out | ended
    label: str
    joinable: bool  # the page offers "Join the queue" (the API has the last word)


def sale_state(event: Event, now: datetime) -> SaleState:
    if event.status == EventStatus.ENDED or now >= event.sale_end:
        return SaleState("ended", "Sale ended", False)
    if event.status == EventStatus.SOLD_OUT:
        return SaleState("sold_out", "Sold out", True)
    if event.status == EventStatus.PAUSED:
        return SaleState("paused", "Paused", True)
    if in_prequeue(
        status=event.status,
        now=now,
        prequeue_opens_at=event.prequeue_opens_at,
        sale_start=event.sale_start,
    ):
        return SaleState("prequeue", "Waiting room open", True)
    if now < event.sale_start:
        return SaleState("upcoming", "Opens soon", False)
    return SaleState("on_sale", "On sale", True)


def websocket_base_url(request: HttpRequest) -> str:
    """``WEBSOCKET_PUBLIC_URL`` when set; else this page's host on ``WS_PORT``
    (`make run`), else this page's own origin (one origin behind nginx). The
    script upgrades ws: to wss: on an https page."""
    if settings.WEBSOCKET_PUBLIC_URL:
        return settings.WEBSOCKET_PUBLIC_URL.rstrip("/")
    scheme = "wss" if request.is_secure() else "ws"
    host = request.get_host()
    if settings.WS_PORT:
        domain, _ = split_domain_port(host)
        return f"{scheme}://{domain or 'localhost'}:{settings.WS_PORT}"
    return f"{scheme}://{host}"


def availability_text(available: int | None) -> str:
    if available is None:
        return "—"
    return "Sold out" if available <= 0 else f"{available:,} left"


def duration_text(seconds: int) -> str:
    minutes, rest = divmod(seconds, 60)
    if minutes and not rest:
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{seconds} seconds"


def not_found_page(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "404.html", {"message": message}, status=404)


def event_list_page(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    rows = []
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
    available = event_available(event)
    tiers = [
        {
            "id": str(tier.id),
            "name": tier.name,
            "price": tier.price,
            "price_display": money_format(tier.price, event.currency),
            "available": available.get(str(tier.id)),
            "available_text": availability_text(available.get(str(tier.id))),
        }
        for tier in event.tiers.all()
    ]
    config = {
        "event_id": str(event.pk),
        "event_name": event.name,
        "currency": event.currency,
        "status": event.status,
        "sale_state": state.key,
        "joinable": state.joinable,
        "sale_start": event.sale_start.isoformat(),
        "sale_end": event.sale_end.isoformat(),
        "max_tickets_per_customer": event.max_tickets_per_customer,
        "tiers": tiers,
        "api": "/api/v1/",
        "ws_url": websocket_base_url(request),
        "signin_url": reverse("signin-page"),
        "payment_return_url": reverse("payment-return-page"),
    }
    context = {
        "event": event,
        "state": state,
        "tiers": tiers,
        "config": config,
        "quantity_choices": range(1, event.max_tickets_per_customer + 1),
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
    return render(
        request,
        "account/signin.html",
        {"config": {"api": "/api/v1/", "next": next_url}},
    )


def payment_return_page(request: HttpRequest) -> HttpResponse:
    """The gateway appends ``?reference=``. The reference is unguessable, so
    showing its status needs no sign-in. The gateway is asked at once (a
    decline sends no webhook); the page refreshes itself while pending."""
    reference = (request.GET.get("reference") or request.GET.get("trxref") or "")[:64]
    payment = payment_check_on_return(reference=reference) if reference else None
    return render(
        request,
        "payments/return.html",
        {
            "payment": payment,
            "pending": payment is not None and payment.status in LIVE_STATUSES,
        },
        status=200 if payment is not None else 404,
    )


urlpatterns = [
    path("", event_list_page, name="event-list-page"),
    path("events/<uuid:event_id>/", event_page, name="event-page"),
    path("signin/", signin_page, name="signin-page"),
    path("payments/return/", payment_return_page, name="payment-return-page"),
    # DEBUG only (empty otherwise): static files under `make run`, where
    # gunicorn has no nginx in front; docker compose's nginx serves them.
    *staticfiles_urlpatterns(),
]
