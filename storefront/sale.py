"""What the customer pages share: the sale as a customer sees it, the tiers
with their prices and availability, where the queue WebSocket is."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.http.request import split_domain_port
from django.shortcuts import render

from events.domain import EventStatus, in_prequeue
from events.models import Event
from events.selectors import event_available
from fairqueue.money import money_format


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


def event_tiers(event: Event) -> list[dict]:
    available = event_available(event)
    return [
        {
            "id": str(tier.id),
            "name": tier.name,
            # general admission, or reserved seating (a seat map to pick from)
            "kind": tier.kind,
            "price": tier.price,
            "price_display": money_format(tier.price, event.currency),
            "available": available.get(str(tier.id)),
            "available_text": availability_text(available.get(str(tier.id))),
        }
        for tier in event.tiers.all()
    ]
