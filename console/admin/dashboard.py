"""The live dashboard of one event (admin/events/event/<id>/dashboard/): who
waits, who is admitted, how fast admission and sales go and when the tickets
will run out at that pace, sold and revenue per tier, and the payments staff
must look at; returns, resale refunds, the waiting list and its offers;
charts of the sale so far (tickets sold with the sell-out
projection, the waiting line, admissions per minute). The page reloads its
numbers and charts every few seconds from the JSON view beside it."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone

from console.after_sale import AfterSale, TierAfterSale
from console.selectors import (
    EventNumbers,
    SaleSeries,
    attention_reasons,
    event_numbers,
    sale_series,
)
from events.authentication import runs_event
from events.models import Event
from fairqueue.adminscope import is_platform_staff
from fairqueue.money import money_format
from payments.models import Payment

REFRESH_SECONDS = 5


def _duration(seconds: float | None) -> str:
    """A span as people say it: seconds, minutes, hours, then days and hours."""
    if seconds is None:
        return "—"
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    if seconds < 86400:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
    days, hours = seconds // 86400, seconds % 86400 // 3600
    return f"{days} day{'s' if days > 1 else ''} {hours} h"


def _ago(moment: datetime | None, now: datetime) -> str:
    return "never" if moment is None else f"{_duration((now - moment).total_seconds())} ago"


def payments_url(attention: str) -> str:
    """The staff payments list, filtered to what needs attention (scoped to
    the user's organizers there; it has no per-event filter)."""
    return reverse("admin:payments_payment_changelist") + f"?attention={attention}"


def may_open(model_admin: admin.ModelAdmin, request: HttpRequest, model: type) -> bool:
    """May the user open ``model``'s admin list (its model permission and
    the tenant rule): a link they could not follow is not shown."""
    page = model_admin.admin_site._registry.get(model)
    return page is not None and bool(page.has_view_permission(request))


def _epoch(moment: datetime) -> float:
    return round(moment.timestamp(), 3)


def series_json(numbers: EventNumbers, series: SaleSeries | None) -> dict[str, Any]:
    """The charts' data: times as Unix seconds over the sale so far
    (``x_range``), and the sold tickets' projection at the last 5 minutes'
    pace from now (none when not selling). The projection looks ahead at
    most as far as the sale has run, so the real line keeps at least half
    of the chart; it stops at the sell-out or the sale's end, and
    ``projection_end`` says where it leads (the page words it in the
    reader's own time). The inventory's line is drawn only when the sales
    come near it (else the sold line would lie flat)."""
    totals = numbers.totals
    if series is None:
        return {"t": [], "sold": [], "waiting": [], "admitted_per_minute": [], "projection": [],
                "x_range": [], "inventory": None, "projection_end": None}  # fmt: skip
    times = series.times
    start, last = times[0].timestamp(), times[-1].timestamp()
    now = min(numbers.read_at.timestamp(), max(last, start))
    ended = numbers.event.sale_end is not None and numbers.event.sale_end <= numbers.read_at
    x_end = max(last, now)
    projection: list[list[float]] = []
    end: dict[str, Any] | None = None
    sold, inventory = totals["sold"], totals["inventory"]
    if numbers.eta_seconds is not None and not ended:
        rate = numbers.sell_rate_per_minute / 60
        sell_out = numbers.read_at + timedelta(seconds=numbers.eta_seconds)
        sale_end = numbers.event.sale_end
        stop = min(filter(None, (sell_out, sale_end)))
        ahead = min((stop - numbers.read_at).total_seconds(), max(now - start, 60))
        x_end = now + ahead
        projection = [
            [round(now, 3), sold],
            [round(x_end, 3), min(inventory, round(sold + rate * ahead))],
        ]
        if sale_end is not None and sell_out > sale_end:
            by_end = min(
                inventory, round(sold + rate * (sale_end - numbers.read_at).total_seconds())
            )
            end = {"kind": "sale_end", "at": _epoch(sale_end), "sold": by_end}
        else:
            end = {"kind": "sell_out", "at": _epoch(sell_out), "sold": inventory}
        end["inventory"] = inventory
    highest = max([*series.sold, *(p[1] for p in projection), 1])
    return {
        "t": [_epoch(t) for t in times],
        "sold": series.sold,
        "waiting": series.waiting,
        "admitted_per_minute": series.admitted_per_minute,
        "inventory": inventory if inventory <= 2 * highest else None,
        "projection": projection,
        "projection_end": end,
        "x_range": [round(start, 3), round(x_end, 3)],
    }


def dashboard_figures(event: Event) -> tuple[EventNumbers, dict[str, Any]]:
    numbers = event_numbers(event)
    figures = numbers_json(numbers)
    figures["series"] = series_json(numbers, sale_series(event, numbers.read_at))
    return numbers, figures


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
        "on_resale": f"{totals['on_resale']:,}",
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
    figures.update(after_sale_json(numbers.after_sale, currency))
    return figures


# The after-sale figures of each tier row (and of the totals' row); the
# waiting list's "any tier" row has no returns.
RETURN_COLUMNS = ("on_resale", "resold", "withdrawn")
AFTER_SALE_COLUMNS = (*RETURN_COLUMNS, "waiting", "waiting_revenue")


def after_sale_key(tier: TierAfterSale, column: str) -> str:
    if tier.id is None and column in RETURN_COLUMNS:
        return ""
    return f"after_{tier.id or 'any'}_{column}"


def after_sale_json(after: AfterSale, currency: str) -> dict[str, str]:
    """Returns, resale refunds, the waiting list and its offers, as shown:
    ``after_<tier id or "any">_<column>`` per tier, ``after_<column>`` in total."""

    def shown(name: str, value: int) -> str:
        return money_format(value, currency) if name == "waiting_revenue" else f"{value:,}"

    figures = {"offers_open": f"{after.offers_open:,}"}
    for name, value in (
        ("refunds_paid", after.refunds_paid),
        ("refunds_pending", after.refunds_pending),
        ("refunds_failed", after.refunds_failed),
    ):
        figures[name] = money_format(value.amount, currency)
        figures[f"{name}_count"] = f"{value.count:,}"
    figures["offers_taken"] = f"{after.offers_taken:,}"
    figures["offers_lapsed"] = f"{after.offers_lapsed:,}"
    for name in AFTER_SALE_COLUMNS:
        figures[f"after_{name}"] = shown(name, after.total(name))
        for tier in after.tiers:
            if key := after_sale_key(tier, name):
                figures[key] = shown(name, getattr(tier, name))
    return figures


def dashboard_view(
    model_admin: admin.ModelAdmin, request: HttpRequest, event: Event
) -> HttpResponse:
    numbers, figures = dashboard_figures(event)
    payments_open = may_open(model_admin, request, Payment)
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
                "url": payments_url(reason) if payments_open else "",
            }
            for reason, label in attention_reasons().items()
        ],
        "after_sale": [
            {
                "name": t.name,
                "cells": [
                    {"key": key, "value": figures.get(key, "—")}
                    for key in (after_sale_key(t, k) for k in AFTER_SALE_COLUMNS)
                ],
            }
            for t in numbers.after_sale.tiers
        ],
        "attention_any": any(numbers.attention.values()),
        "platform_staff": is_platform_staff(request.user),
        "refresh_seconds": REFRESH_SECONDS,
        "data_url": reverse("admin:events_event_dashboard_data", args=[event.pk]),
        "orders_url": reverse("admin:console_order_changelist") + f"?event__id__exact={event.pk}",
        "orders_csv_url": reverse("admin:events_event_orders_csv", args=[event.pk]),
        "holders_csv_url": reverse("admin:events_event_holders_csv", args=[event.pk]),
        "change_url": reverse("admin:events_event_change", args=[event.pk]),
        # The door is the organizer's (after the sale too); platform staff do not run it.
        "door_url": reverse("check-in-page", args=[event.pk])
        if runs_event(request, event.pk)
        else "",
    }
    return TemplateResponse(request, "console/dashboard.html", context)


def dashboard_data_view(request: HttpRequest, event: Event) -> JsonResponse:
    return JsonResponse(dashboard_figures(event)[1])
