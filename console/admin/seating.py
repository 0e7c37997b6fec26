"""The seat map of a reserved tier in the console: drawn (held and sold
seats shown, refreshed live), generated ("rows A-T, 30 seats each": the
form starts from the rows the tier has, and asks first, saying how the
tier's inventory changes), imported from CSV, and seats blocked or
unblocked. Every write goes through ``events.services.seating``; a refusal
is an admin message."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse

from claims.domain import ClaimStatus
from events.models import Event, TicketTier
from events.services import seat_map_generate, seat_map_import_csv, seats_block
from fairqueue.errors import AppError
from inventory.seating.domain import row_index
from inventory.seating.selectors import tier_seat_statuses, tier_seats
from inventory.seating.svg import seat_map_svg

REFRESH_SECONDS = 5


class GenerateForm(forms.Form):
    first_row = forms.CharField(max_length=3, initial="A")
    last_row = forms.CharField(max_length=3, initial="T")
    seats_per_row = forms.IntegerField(min_value=1, max_value=1000, initial=30)
    section = forms.CharField(max_length=32, required=False)

    def seats(self) -> int | None:
        """How many seats the grid has; None when its rows are not rows."""
        data = self.cleaned_data
        try:
            rows = row_index(data["last_row"]) - row_index(data["first_row"]) + 1
        except ValueError:
            return None
        return rows * data["seats_per_row"] if rows > 0 else None


def grid_in_use(tier: TicketTier) -> dict[str, object]:
    """The grid the tier's seats make (its first and last row, the most
    seats in a row, its section): what the generator starts from, so a
    change of the seats per row does not also reset the rows. None of it
    for a tier without seats."""
    seats = tier_seats(tier_id=tier.pk)
    rows = sorted({s.row for s in seats if s.row and s.row.isalpha()}, key=row_index)
    if not rows:
        return {}
    return {
        "first_row": rows[0],
        "last_row": rows[-1],
        "seats_per_row": max(s.number for s in seats if s.number),
        "section": next((s.section for s in seats if s.section), ""),
    }


class ImportForm(forms.Form):
    csv_file = forms.FileField(required=False, label="CSV file")
    csv_text = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False)


class BlockForm(forms.Form):
    seats = forms.CharField(
        max_length=20_000, help_text="Seat labels separated by commas or spaces: A-1, A-2"
    )
    action = forms.ChoiceField(choices=[("block", "Block"), ("unblock", "Unblock")])


def seat_map_urls(model_admin: admin.ModelAdmin) -> list[URLPattern]:
    def view(handler: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        def wrapped(request: HttpRequest, object_id: str, tier_id: uuid.UUID) -> HttpResponse:
            event = model_admin.get_object(request, object_id)
            if event is None:
                raise Http404("No such event.")
            if not model_admin.has_view_permission(request, event):
                raise PermissionDenied
            tier = TicketTier.objects.filter(pk=tier_id, event=event).first()
            if tier is None:
                raise Http404("No such tier.")
            if request.method == "POST" and not model_admin.has_change_permission(request, event):
                raise PermissionDenied
            return handler(model_admin, request, event, tier)

        return model_admin.admin_site.admin_view(wrapped)

    return [
        path("<path:object_id>/seats/<uuid:tier_id>/", view(seat_map_page),
             name="events_event_seat_map"),
        path("<path:object_id>/seats/<uuid:tier_id>/map.svg", view(seat_map_drawing),
             name="events_event_seat_map_svg"),
    ]  # fmt: skip


def _seats(tier: TicketTier) -> list[dict]:
    return tier_seat_statuses(tier_id=tier.pk, sold_claim_status=ClaimStatus.CONFIRMED)


def seat_map_drawing(
    model_admin: admin.ModelAdmin, request: HttpRequest, event: Event, tier: TicketTier
) -> HttpResponse:
    response = HttpResponse(seat_map_svg(_seats(tier)), content_type="image/svg+xml")
    response["Cache-Control"] = "no-store"
    return response


def seat_map_page(
    model_admin: admin.ModelAdmin, request: HttpRequest, event: Event, tier: TicketTier
) -> HttpResponse:
    generate = GenerateForm(initial=grid_in_use(tier))
    upload, block = ImportForm(), BlockForm()
    confirm: dict[str, object] | None = None
    if request.method == "POST":
        kind = request.POST.get("form")
        if kind == "generate":
            generate = GenerateForm(request.POST)
            # A grid that is not one is refused by the service, with its reason.
            if generate.is_valid() and ("confirm" in request.POST or generate.seats() is None):
                return _write(request, lambda: _generated(tier, generate.cleaned_data))
            if generate.is_valid():
                confirm = _generate_plan(tier, generate)
        elif kind == "import":
            upload = ImportForm(request.POST, request.FILES)
            if upload.is_valid():
                return _write(request, lambda: _imported(tier, upload.cleaned_data))
        elif kind == "block":
            block = BlockForm(request.POST)
            if block.is_valid():
                return _write(request, lambda: _blocked(tier, block.cleaned_data))
    seats = _seats(tier)
    counts = Counter(s["status"] for s in seats)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "original": event,
        "tier": tier,
        "title": f"{event.name}: {tier.name} seats",
        "svg": seat_map_svg(seats),
        "svg_url": reverse("admin:events_event_seat_map_svg", args=[event.pk, tier.pk]),
        "change_url": reverse("admin:events_event_change", args=[event.pk]),
        "counts": [(s, counts.get(s, 0)) for s in ("available", "held", "sold", "blocked")],
        "total": len(seats),
        "refresh_seconds": REFRESH_SECONDS,
        "can_change": model_admin.has_change_permission(request, event),
        # Not "block": a template's {% block %} tag owns that name there.
        "generate_form": generate,
        "generate_plan": confirm,
        "upload_form": upload,
        "block_form": block,
    }
    return render(request, "console/seatmap.html", context)


def _generate_plan(tier: TicketTier, form: GenerateForm) -> dict[str, object]:
    """What generating this grid does, said before it is done."""
    data = form.cleaned_data
    seats = form.seats() or 0
    change = seats - tier.inventory
    return {
        "grid": f"rows {data['first_row'].upper()} to {data['last_row'].upper()}, "
        f"{data['seats_per_row']} seats each"
        + (f", section {data['section']}" if data["section"] else ""),
        "seats": f"{seats:,}",
        "inventory": f"{tier.inventory:,}",
        "change": f"{change:+,}" if change else "",
        "values": {
            name: data[name] for name in ("first_row", "last_row", "seats_per_row", "section")
        },
    }


def _write(request: HttpRequest, action: Callable[[], str]) -> HttpResponse:
    try:
        messages.success(request, action())
    except AppError as exc:
        messages.error(request, f"Nothing was changed: {exc.message}")
        for field, problem in exc.details.items():
            messages.error(request, f"{field}: {problem}")
    return HttpResponseRedirect(request.get_full_path())


def _generated(tier: TicketTier, data: dict) -> str:
    count = seat_map_generate(
        tier_id=tier.pk,
        first_row=data["first_row"],
        last_row=data["last_row"],
        seats_per_row=data["seats_per_row"],
        section=data["section"],
    )
    return f"The seat map now has {count:,} seats."


def _imported(tier: TicketTier, data: dict) -> str:
    upload = data.get("csv_file")
    try:
        text = upload.read().decode("utf-8-sig") if upload else data["csv_text"]
    except UnicodeDecodeError:
        text = "\x00"  # refused by the parser below, as any bad CSV
    count = seat_map_import_csv(tier_id=tier.pk, text=text)
    return f"Imported {count:,} seats."


def _blocked(tier: TicketTier, data: dict) -> str:
    labels = data["seats"].replace(",", " ").split()
    blocked = data["action"] == "block"
    changed = seats_block(tier_id=tier.pk, labels=labels, blocked=blocked)
    verb = "Blocked" if blocked else "Unblocked"
    return f"{verb} {len(changed)} of {len(set(labels))} seats" + (
        f": {', '.join(changed[:50])}" if changed else " (held, sold or unknown seats stay)."
    )
