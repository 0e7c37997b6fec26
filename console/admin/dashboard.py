"""The live dashboard of one event (admin/events/event/<id>/dashboard/): who
waits, who is admitted, how fast admission and sales go and when the tickets
will run out at that pace, sold and revenue per tier, and the payments staff
must look at. The page reloads its numbers every few seconds from the JSON
view beside it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone

from console.selectors import EventNumbers, attention_reasons, event_numbers
from events.models import Event
from fairqueue.money import money_format

REFRESH_SECONDS = 5


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def _ago(moment: datetime | None, now: datetime) -> str:
    return "never" if moment is None else f"{_duration((now - moment).total_seconds())} ago"


def payments_url(attention: str) -> str:
    """The staff payments list, filtered to what needs attention (scoped to
    the user's organizers there; it has no per-event filter)."""
    return reverse("admin:payments_payment_changelist") + f"?attention={attention}"


def numbers_json(numbers: EventNumbers) -> dict[str, Any]:
    """Every figure as shown, keyed as the page's ``data-key`` attributes."""
    event, currency = numbers.event, numbers.event.currency
    totals = numbers.totals
    sold_out = totals["free"] == 0 and totals["inventory"] > 0
    figures: dict[str, Any] = {
        "status": event.get_status_display(),
        "waiting": f"{numbers.waiting:,}",
        "admitted": f"{numbers.admitted:,}",
        "admitted_total": f"{numbers.admitted_total:,}",
        "admission_rate": f"{numbers.admission_rate_per_minute:,.0f} / min",
        "sell_rate": f"{numbers.sell_rate_per_minute:,.1f} tickets / min",
        "eta": "sold out" if sold_out else _duration(numbers.eta_seconds),
        "last_tick": _ago(numbers.last_tick, numbers.read_at),
        "sold": f"{totals['sold']:,} of {totals['inventory']:,}",
        "revenue": money_format(totals["revenue"], currency),
        "read_at": timezone.localtime(numbers.read_at).strftime("%H:%M:%S"),
    }
    for reason, count in numbers.attention.items():
        figures[f"attention_{reason}"] = str(count)
    for tier in numbers.tiers:
        for name, value in (
            ("sold", f"{tier.sold:,}"),
            ("claimed", f"{tier.claimed:,}"),
            ("free", f"{tier.free:,}"),
            ("revenue", money_format(tier.revenue, currency)),
        ):
            figures[f"tier_{tier.id}_{name}"] = value
    figures["total_claimed"] = f"{totals['claimed']:,}"
    figures["total_free"] = f"{totals['free']:,}"
    return figures


def dashboard_view(
    model_admin: admin.ModelAdmin, request: HttpRequest, event: Event
) -> HttpResponse:
    numbers = event_numbers(event)
    figures = numbers_json(numbers)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "original": event,
        "title": f"{event.name}: live",
        "numbers": numbers,
        "figures": figures,
        "tiers": [
            {
                "id": t.id,
                "name": t.name,
                "price": money_format(t.price, event.currency),
                "inventory": f"{t.inventory:,}",
                **{k: figures[f"tier_{t.id}_{k}"] for k in ("sold", "claimed", "free", "revenue")},
            }
            for t in numbers.tiers
        ],
        "attention": [
            {
                "key": f"attention_{reason}",
                "count": figures[f"attention_{reason}"],
                "label": label,
                "url": payments_url(reason),
            }
            for reason, label in attention_reasons().items()
        ],
        "refresh_seconds": REFRESH_SECONDS,
        "data_url": reverse("admin:events_event_dashboard_data", args=[event.pk]),
        "orders_url": reverse("admin:console_order_changelist") + f"?event__id__exact={event.pk}",
        "orders_csv_url": reverse("admin:events_event_orders_csv", args=[event.pk]),
        "holders_csv_url": reverse("admin:events_event_holders_csv", args=[event.pk]),
        "change_url": reverse("admin:events_event_change", args=[event.pk]),
    }
    return TemplateResponse(request, "console/dashboard.html", context)


def dashboard_data_view(request: HttpRequest, event: Event) -> JsonResponse:
    return JsonResponse(numbers_json(event_numbers(event)))
