"""The waiting room page, ``/events/<id>/queue/``: its own URL, mobile-first.
The page is a shell; storefront/static/storefront/queue/ fills it from
``GET events/{id}/me/`` and the queue WebSocket."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from events.selectors import event_public_get
from fairqueue.errors import NotFound
from queueing.domain import CHOOSE_WARNING_SECONDS
from queueing.services.waitlist import returns_open_after_sale
from storefront.sale import (
    duration_text,
    event_tiers,
    not_found_page,
    sale_state,
    websocket_base_url,
)


def waiting_room_page(request: HttpRequest, event_id: str) -> HttpResponse:
    try:
        event = event_public_get(event_id=event_id)
    except NotFound:
        return not_found_page(request, "There is no such event, or it is not on sale yet.")
    now = timezone.now()
    state = sale_state(event, now)
    tiers = event_tiers(event)
    config = {
        "event_id": str(event.pk),
        "event_name": event.name,
        "currency": event.currency,
        "status": event.status,
        "sale_state": state.key,
        # The sale is over, returns are open: the waiting list is (waitlist.js).
        "waitlist_after_sale": returns_open_after_sale(event, now),
        "sale_start": event.sale_start.isoformat(),
        "sale_end": event.sale_end.isoformat(),
        "prequeue_opens_at": (
            event.prequeue_opens_at.isoformat() if event.prequeue_opens_at else None
        ),
        "max_tickets_per_customer": event.max_tickets_per_customer,
        # For the wait estimate: at most one batch is admitted per tick.
        "admission_batch_size": event.admission_batch_size,
        "admission_interval_seconds": settings.ADMISSION_INTERVAL_SECONDS,
        # The time to choose: the page warns this long before it runs out.
        "choose_warning_seconds": CHOOSE_WARNING_SECONDS,
        "tiers": tiers,
        "api": "/api/v1/",
        "ws_url": websocket_base_url(request),
        "signin_url": reverse("signin-page"),
    }
    context = {
        "event": event,
        "state": state,
        "tiers": tiers,
        "config": config,
        "quantity_choices": range(1, event.max_tickets_per_customer + 1),
        "admission_window": duration_text(event.admission_window_seconds),
    }
    return render(request, "events/queue.html", context)
