"""Events: the list with ticket totals, the page with its tiers inline and
live numbers, saves through the events services, and the sale actions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q, QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
    StreamingHttpResponse,
)
from django.http.response import HttpResponseBase
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join

from claims.domain import ClaimStatus
from claims.selectors import tier_ticket_counts
from console.admin.dashboard import dashboard_data_view, dashboard_view
from console.admin.forms import EventAdminForm
from console.admin.seating import seat_map_urls
from console.admin.tiers import TicketTierInline
from console.exports import holders_csv, orders_csv
from console.models import Order
from events.authentication import runs_event
from events.domain import EventStatus
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
from fairqueue.adminscope import in_reach, is_platform_staff, organizer_ids
from fairqueue.errors import AppError
from fairqueue.money import money_format
from queueing.selectors import queue_length, waitlist_summary


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
                    "tiers__tickets",
                    filter=Q(tiers__tickets__claim__isnull=True, tiers__tickets__blocked=False),
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
        "in_queue",
        "live",
    )
    search_fields = ("name", "slug", "venue")
    date_hierarchy = "sale_start"
    actions = ["activate_events", "pause_events", "resume_events", "end_events"]
    fieldsets = (
        (
            None,
            {"fields": ("organizer", "name", "slug", "status", "live_numbers", "waiting_list")},
        ),
        ("Details", {"fields": ("description", "venue", "starts_at", "currency")}),
        ("Sale window", {"fields": ("sale_start", "sale_end", "prequeue_opens_at")}),
        (
            "Admission",
            {
                "description": (
                    "Two times: an admitted customer has the time to choose to hold tickets "
                    "(warned 30 seconds before its end, one extension on request); held "
                    "tickets then have their own time to pay. An admission that lapses frees "
                    "its place for the next in line at the next admission tick."
                ),
                "fields": (
                    "max_tickets_per_customer",
                    "admission_batch_size",
                    "admission_window_seconds",
                    "max_active_admitted",
                    "admit_ahead",
                ),
            },
        ),
        (
            "Returns and transfers",
            {
                "fields": (
                    "returns_until",
                    "return_fee",
                    "transfers_allowed",
                    "transfer_limit",
                    "holder_shown",
                )
            },
        ),
        ("Record", {"classes": ("collapse",), "fields": ("created_at", "updated_at")}),
    )
    readonly_fields = (
        "slug", "status", "live_numbers", "waiting_list", "created_at", "updated_at",
    )  # fmt: skip

    # -- the tenant rule (fairqueue/adminscope.py, applied by the site) ------------
    # Platform staff see every event and change none: the sale is its organizer's.
    organizer_paths = ("organizer_id",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Event]:
        return super().get_queryset(request).select_related("organizer")

    def get_list_filter(self, request: HttpRequest) -> tuple:
        # Other organizers' names are not an organizer's business.
        return ("status", "organizer") if is_platform_staff(request.user) else ("status",)

    def has_change_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        if not super().has_change_permission(request, obj):
            return False
        return obj is None or obj.status != EventStatus.ENDED  # ended: read-only

    def has_delete_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        if not super().has_delete_permission(request, obj):
            return False
        return obj is None or obj.status == EventStatus.DRAFT  # nothing sold yet

    def get_actions(self, request: HttpRequest) -> dict:
        actions = super().get_actions(request)
        # Bulk delete checks no per-object rule; deleting is one draft at a time.
        actions.pop("delete_selected", None)
        return actions

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "organizer":
            # Only an organizer whose events the user may change.
            kwargs["queryset"] = in_reach(request, Organizer.objects.all(), "id", change=True)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        """A user who belongs to exactly one organizer gets it preset."""
        initial: dict[str, Any] = super().get_changeform_initial_data(request)
        mine = organizer_ids(request)
        if not request.user.is_superuser and len(mine) == 1:
            initial.setdefault("organizer", next(iter(mine)))
        return initial

    def get_readonly_fields(self, request: HttpRequest, obj: Event | None = None) -> tuple:
        fields = tuple(super().get_readonly_fields(request, obj))
        if obj is not None and obj.status != EventStatus.DRAFT:
            fields += ("currency",)  # amounts already quoted in it
        return fields

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return EventChangeList

    # -- the dashboard and the exports ------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        own = [
            path("<path:object_id>/dashboard/", self._event_view(self._dashboard),
                 name="events_event_dashboard"),
            path("<path:object_id>/dashboard/data/", self._event_view(self._dashboard_data),
                 name="events_event_dashboard_data"),
            path("<path:object_id>/orders.csv", self._event_view(self._orders_csv),
                 name="events_event_orders_csv"),
            path("<path:object_id>/ticket-holders.csv", self._event_view(self._holders_csv),
                 name="events_event_holders_csv"),
        ]  # fmt: skip
        return own + seat_map_urls(self) + super().get_urls()

    def _event_view(self, view: Callable[[HttpRequest, Event], HttpResponseBase]) -> Callable:
        """An admin view of one event the user may see (else 404, as for
        another organizer's event; 403 without the view permission)."""

        def wrapped(request: HttpRequest, object_id: str) -> HttpResponseBase:
            event = self.get_object(request, object_id)
            if event is None:
                raise Http404("No such event.")
            if not self.has_view_permission(request, event):
                raise PermissionDenied
            return view(request, event)

        return self.admin_site.admin_view(wrapped)

    def _dashboard(self, request: HttpRequest, event: Event) -> HttpResponse:
        return dashboard_view(self, request, event)

    def _dashboard_data(self, request: HttpRequest, event: Event) -> HttpResponse:
        return dashboard_data_view(request, event)

    def _orders_csv(self, request: HttpRequest, event: Event) -> StreamingHttpResponse:
        return orders_csv(Order.objects.filter(event=event), f"orders-{event.slug}.csv")

    def _holders_csv(self, request: HttpRequest, event: Event) -> StreamingHttpResponse:
        return holders_csv(Order.objects.filter(event=event), f"ticket-holders-{event.slug}.csv")

    @admin.display(description="")
    def live(self, event: Event) -> str:
        url = reverse("admin:events_event_dashboard", args=[event.pk])
        return format_html('<a href="{}">dashboard</a>', url)

    # -- writes: services only ---------------------------------------------------

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict | None = None,
    ) -> HttpResponse:
        event = self.get_object(request, object_id) if object_id else None
        if event is not None and self.has_view_permission(request, event):
            extra_context = {
                **(extra_context or {}),
                "dashboard_url": reverse("admin:events_event_dashboard", args=[event.pk]),
                # The door is its organizer's (after the sale too), not platform staff's.
                "door_url": reverse("check-in-page", args=[event.pk])
                if runs_event(request, event.pk)
                else "",
            }
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
        for event in queryset:  # only events the user may change (the site narrows it)
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
    def in_queue(self, event: Event) -> int:
        return queue_length(event_id=event.pk)

    @admin.display(description="waiting list")
    def waiting_list(self, event: Event) -> str:
        """Per tier wanted: who waits, offers open, and the revenue the
        waiting entries represent at face value."""
        if event._state.adding:
            return "-"
        summary = waitlist_summary(event_id=event.pk)
        lines = [line for line in summary if line.waiting or line.offered]
        if not lines:
            return "nobody"
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (line.tier, line.waiting, line.offered, money_format(line.revenue, line.currency))
                for line in lines
            ),
        )
        return format_html(
            "<table><thead><tr><th>tier wanted</th><th>waiting</th><th>offers open</th>"
            "<th>revenue waiting</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )

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
        length = queue_length(event_id=event.pk)
        return format_html(
            '<p>Status: <strong>{}</strong> &middot; in queue: {} &middot; <a href="{}">'
            "live dashboard</a></p>"
            "<table><thead><tr><th>tier</th><th>inventory</th><th>sold</th>"
            "<th>claimed (unpaid)</th><th>free</th></tr></thead><tbody>{}</tbody>"
            "<tfoot><tr><th>total</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th></tr></tfoot>"
            "</table>",
            event.get_status_display(),
            length,
            reverse("admin:events_event_dashboard", args=[event.pk]),
            rows,
            sum(t.inventory for t in tiers),
            sum(c.sold for c in counts.values()),
            sum(c.claimed for c in counts.values()),
            sum(c.free for c in counts.values()),
        )
