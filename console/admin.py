"""Organizer admin: events with their tiers inline, sale actions, live numbers.

An organizer user (a member of an ``Organizer``) sees and changes only that
organizer's events; superusers see all. Every write goes through
``events.services``; a refused change is shown as an admin message.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

import redis
from django import forms
from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.core.validators import MinValueValidator
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.html import format_html, format_html_join

from claims.domain import ClaimStatus
from claims.selectors import tier_ticket_counts
from events.domain import EventStatus, sale_window_errors
from events.models import Event, Organizer, TicketTier
from events.services import (
    EVENT_EDITABLE_FIELDS,
    event_activate,
    event_create,
    event_end,
    event_pause,
    event_resume,
    event_update,
    tier_create,
    tier_update,
)
from fairqueue.errors import AppError
from inventory.selectors import tier_held_tickets
from queueing.selectors import queue_length

logger = logging.getLogger(__name__)


def _organizer_ids(request: HttpRequest) -> frozenset[int]:
    """The organizers the user belongs to (read once per request)."""
    cached: frozenset[int] | None = getattr(request, "_fq_organizer_ids", None)
    if cached is None:
        user = request.user
        cached = frozenset(
            user.organizers.values_list("id", flat=True) if user.is_authenticated else ()
        )
        request._fq_organizer_ids = cached  # type: ignore[attr-defined]  # a per-request cache
    return cached


def _manages(request: HttpRequest, event: Event | None) -> bool:
    if event is None or request.user.is_superuser:
        return True
    return event.organizer_id in _organizer_ids(request)


def _queue_length(event_id: uuid.UUID) -> int | None:
    """Waiting customers, or None while Redis is down."""
    try:
        return queue_length(event_id=event_id)
    except redis.RedisError:
        logger.warning("queue length unavailable for event %s", event_id)
        return None


# --- forms -------------------------------------------------------------------


class EventAdminForm(forms.ModelForm):
    class Meta:
        model = Event
        fields = sorted(EVENT_EDITABLE_FIELDS)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        errors = sale_window_errors(
            sale_start=data.get("sale_start"),
            sale_end=data.get("sale_end"),
            prequeue_opens_at=data.get("prequeue_opens_at"),
        )
        for field, message in errors.items():
            self.add_error(field, message)
        return data


class TierInlineForm(forms.ModelForm):
    class Meta:
        model = TicketTier
        fields = ["name", "price", "inventory", "sort_order"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("price", "inventory"):
            field = self.fields[name]
            assert isinstance(field, forms.IntegerField)  # the models' integer fields
            field.min_value = 1
            field.validators.append(MinValueValidator(1))
            field.widget.attrs["min"] = 1

    def clean_inventory(self) -> int:
        inventory = self.cleaned_data["inventory"]
        if self.instance.pk:
            held = tier_held_tickets(tier_id=self.instance.pk)
            if inventory < held:
                raise forms.ValidationError(
                    f"{held} tickets of this tier are already claimed or sold; "
                    "the inventory cannot go below that."
                )
        return inventory


# --- tiers inline ------------------------------------------------------------


class TicketTierInline(admin.TabularInline):
    model = TicketTier
    form = TierInlineForm
    fields = ("name", "price", "inventory", "sort_order", "sold", "claimed", "free")
    readonly_fields = ("sold", "claimed", "free")
    extra = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Inline instances live for one request: a safe place for a cache.
        self._counts: dict[object, dict] = {}

    def get_extra(self, request: HttpRequest, obj: Event | None = None, **kwargs: Any) -> int:
        return 1 if obj is None else 0

    def get_queryset(self, request: HttpRequest) -> QuerySet[TicketTier]:
        qs = super().get_queryset(request)
        if request.user.is_superuser:
            return qs
        return qs.filter(event__organizer__in=_organizer_ids(request))

    def _editable(self, request: HttpRequest, obj: Event | None) -> bool:
        return _manages(request, obj) and (obj is None or obj.status != EventStatus.ENDED)

    def has_view_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return super().has_view_permission(request, obj) and _manages(request, obj)

    def has_add_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return super().has_add_permission(request, obj) and self._editable(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return super().has_change_permission(request, obj) and self._editable(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        # Only a draft's tiers may go: nobody can hold their tickets yet.
        draft = obj is None or obj.status == EventStatus.DRAFT
        return super().has_delete_permission(request, obj) and _manages(request, obj) and draft

    def _count(self, tier: TicketTier, name: str) -> int | str:
        if tier._state.adding:  # an empty row (the UUID pk exists before saving)
            return "-"
        if tier.event_id not in self._counts:
            self._counts[tier.event_id] = tier_ticket_counts(event_id=tier.event_id)
        counts = self._counts[tier.event_id].get(tier.pk)
        return getattr(counts, name) if counts else 0

    @admin.display(description="sold")
    def sold(self, tier: TicketTier) -> int | str:
        return self._count(tier, "sold")

    @admin.display(description="claimed (unpaid)")
    def claimed(self, tier: TicketTier) -> int | str:
        return self._count(tier, "claimed")

    @admin.display(description="free")
    def free(self, tier: TicketTier) -> int | str:
        return self._count(tier, "free")


# --- events ------------------------------------------------------------------


class EventChangeList(ChangeList):
    """The list page adds ticket totals (Postgres truth) to each row."""

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet:
        return (
            super()
            .get_queryset(request, exclude_parameters)
            .annotate(
                tickets_sold_n=Count(
                    "tiers__tickets",
                    filter=Q(tiers__tickets__claim__status=ClaimStatus.CONFIRMED),
                ),
                tickets_free_n=Count(
                    "tiers__tickets", filter=Q(tiers__tickets__claim__isnull=True)
                ),
            )
        )


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    form = EventAdminForm
    inlines = [TicketTierInline]
    list_display = (
        "name",
        "organizer",
        "status",
        "sale_start",
        "sale_end",
        "tickets_sold",
        "tickets_free",
        "queue_length",
    )
    search_fields = ("name", "slug", "venue")
    date_hierarchy = "sale_start"
    actions = ["activate_events", "pause_events", "resume_events", "end_events"]
    fieldsets = (
        (None, {"fields": ("organizer", "name", "slug", "status", "live_numbers")}),
        ("Details", {"fields": ("description", "venue", "starts_at", "currency")}),
        ("Sale window", {"fields": ("sale_start", "sale_end", "prequeue_opens_at")}),
        (
            "Admission",
            {
                "fields": (
                    "max_tickets_per_customer",
                    "admission_batch_size",
                    "admission_window_seconds",
                    "max_active_admitted",
                )
            },
        ),
        ("Record", {"classes": ("collapse",), "fields": ("created_at", "updated_at")}),
    )
    readonly_fields = ("slug", "status", "live_numbers", "created_at", "updated_at")

    # -- scoping --------------------------------------------------------------

    def get_queryset(self, request: HttpRequest) -> QuerySet[Event]:
        qs = super().get_queryset(request).select_related("organizer")
        if request.user.is_superuser:
            return qs
        return qs.filter(organizer__in=_organizer_ids(request))

    def get_list_filter(self, request: HttpRequest) -> tuple:
        # Other organizers' names are not an organizer's business.
        return ("status", "organizer") if request.user.is_superuser else ("status",)

    def has_view_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return super().has_view_permission(request, obj) and _manages(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return super().has_add_permission(request) and (
            request.user.is_superuser or bool(_organizer_ids(request))
        )

    def has_change_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        if not (super().has_change_permission(request, obj) and _manages(request, obj)):
            return False
        return obj is None or obj.status != EventStatus.ENDED  # ended: read-only

    def has_delete_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        if not (super().has_delete_permission(request, obj) and _manages(request, obj)):
            return False
        return obj is None or obj.status == EventStatus.DRAFT  # nothing sold yet

    def get_actions(self, request: HttpRequest) -> dict:
        actions = super().get_actions(request)
        # Bulk delete checks no per-object rule; deleting is one draft at a time.
        actions.pop("delete_selected", None)
        return actions

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "organizer" and not request.user.is_superuser:
            kwargs["queryset"] = Organizer.objects.filter(id__in=_organizer_ids(request))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Event | None = None) -> tuple:
        fields = tuple(super().get_readonly_fields(request, obj))
        if obj is not None and obj.status != EventStatus.DRAFT:
            fields += ("currency",)  # amounts already quoted in it
        return fields

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return EventChangeList

    # -- writes: services only ---------------------------------------------------

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict | None = None,
    ) -> HttpResponse:
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except AppError as exc:
            # The whole save was rolled back (the admin wraps it in a transaction).
            self.message_user(request, f"Nothing was saved: {exc.message}", messages.ERROR)
            for field, problem in exc.details.items():
                self.message_user(request, f"{field}: {problem}", messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def save_model(self, request: HttpRequest, obj: Event, form: forms.Form, change: bool) -> None:
        data = {f: v for f, v in form.cleaned_data.items() if f in EVENT_EDITABLE_FIELDS}
        if change:
            changed = {f: data[f] for f in form.changed_data if f in data}
            if changed:
                event_update(event_id=obj.pk, **changed)
            return
        event = event_create(tiers=[], **data)
        # The admin goes on with ``obj`` (inlines, log, redirect): make it the saved event.
        for field in Event._meta.concrete_fields:
            setattr(obj, field.attname, getattr(event, field.attname))
        obj._state.adding, obj._state.db = False, event._state.db

    def save_formset(
        self, request: HttpRequest, form: forms.ModelForm, formset: Any, change: bool
    ) -> None:
        if formset.model is not TicketTier:
            return super().save_formset(request, form, formset, change)
        formset.save(commit=False)  # fills new/changed/deleted_objects for the log
        for tier in formset.deleted_objects:
            tier.delete()
        formset.new_objects = [
            tier_create(
                event=form.instance,
                name=tier.name,
                price=tier.price,
                inventory=tier.inventory,
                sort_order=tier.sort_order,
            )
            for tier in formset.new_objects
        ]
        for tier, _fields in formset.changed_objects:
            tier_update(
                tier_id=tier.pk,
                name=tier.name,
                price=tier.price,
                inventory=tier.inventory,
                sort_order=tier.sort_order,
            )
        return None

    # -- actions ------------------------------------------------------------------

    def _transition(
        self,
        request: HttpRequest,
        queryset: QuerySet[Event],
        service: Callable[..., Event],
        done: str,
    ) -> None:
        changed = []
        for event in queryset:
            if not _manages(request, event):
                continue
            try:
                service(event_id=event.pk)
            except AppError as exc:
                self.message_user(request, f"“{event.name}”: {exc.message}", messages.ERROR)
            else:
                changed.append(event.name)
        if changed:
            names = ", ".join(f"“{n}”" for n in changed)
            self.message_user(request, f"{done}: {names}.", messages.SUCCESS)

    @admin.action(description="Activate (open sales)", permissions=["change"])
    def activate_events(self, request: HttpRequest, queryset: QuerySet[Event]) -> None:
        self._transition(request, queryset, event_activate, "Activated")

    @admin.action(description="Pause (stop admitting)", permissions=["change"])
    def pause_events(self, request: HttpRequest, queryset: QuerySet[Event]) -> None:
        self._transition(request, queryset, event_pause, "Paused")

    @admin.action(description="Resume", permissions=["change"])
    def resume_events(self, request: HttpRequest, queryset: QuerySet[Event]) -> None:
        self._transition(request, queryset, event_resume, "Resumed")

    @admin.action(description="End the sale", permissions=["change"])
    def end_events(self, request: HttpRequest, queryset: QuerySet[Event]) -> None:
        self._transition(request, queryset, event_end, "Ended")

    # -- live numbers ---------------------------------------------------------

    @admin.display(description="sold", ordering="tickets_sold_n")
    def tickets_sold(self, event: Event) -> int | None:
        return getattr(event, "tickets_sold_n", None)

    @admin.display(description="free", ordering="tickets_free_n")
    def tickets_free(self, event: Event) -> int | None:
        return getattr(event, "tickets_free_n", None)

    @admin.display(description="in queue")
    def queue_length(self, event: Event) -> int | str:
        length = _queue_length(event.pk)
        return "-" if length is None else length

    @admin.display(description="live numbers")
    def live_numbers(self, event: Event) -> str:
        if event._state.adding:
            return "-"
        counts = tier_ticket_counts(event_id=event.pk)
        tiers = list(event.tiers.all())
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (t.name, t.inventory, counts[t.pk].sold, counts[t.pk].claimed, counts[t.pk].free)
                for t in tiers
                if t.pk in counts
            ),
        )
        length = _queue_length(event.pk)
        return format_html(
            "<p>Status: <strong>{}</strong> &middot; in queue: {}</p>"
            "<table><thead><tr><th>tier</th><th>inventory</th><th>sold</th>"
            "<th>claimed (unpaid)</th><th>free</th></tr></thead><tbody>{}</tbody>"
            "<tfoot><tr><th>total</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th></tr></tfoot>"
            "</table>",
            event.get_status_display(),
            "n/a" if length is None else length,
            rows,
            sum(t.inventory for t in tiers),
            sum(c.sold for c in counts.values()),
            sum(c.claimed for c in counts.values()),
            sum(c.free for c in counts.values()),
        )


# --- organizers ----------------------------------------------------------------


@admin.register(Organizer)
class OrganizerAdmin(admin.ModelAdmin):
    list_display = ("name", "member_count", "created_at")
    search_fields = ("name",)
    filter_horizontal = ("members",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Organizer]:
        qs = super().get_queryset(request).annotate(member_count_n=Count("members"))
        if request.user.is_superuser:
            return qs
        return qs.filter(id__in=_organizer_ids(request))

    # Membership decides what a user may see: only superusers change it.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_change_permission(self, request: HttpRequest, obj: Organizer | None = None) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj: Organizer | None = None) -> bool:
        return request.user.is_superuser

    @admin.display(description="members", ordering="member_count_n")
    def member_count(self, organizer: Organizer) -> int:
        return organizer.member_count_n  # type: ignore[attr-defined]  # get_queryset's annotation
