"""Queue and waiting-list entries in the admin: read-only, for staff granted
``queueing.view_queueentry`` / ``view_waitlistentry`` (superusers included). Organizer users see the
entries of their own events only, platform staff all (the tenant rule,
fairqueue/adminscope.py).
Nothing is changed from here: entries move only through the queueing services.
The customer and the event are links."""

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from queueing.models import QueueEntry, WaitlistEntry


def _link(route: str, pk: object, label: object) -> str:
    return format_html('<a href="{}">{}</a>', reverse(route, args=[pk]), label)


class _EntryAdmin(admin.ModelAdmin):
    """Read-only: entries move only through their services. The customer
    and the event are links; organizers see their own events' entries."""

    organizer_paths = ("event__organizer_id",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    @admin.display(description="customer", ordering="customer__email")
    def customer_link(self, entry: QueueEntry | WaitlistEntry) -> str:
        return _link("admin:core_customer_change", entry.customer_id, entry.customer.email)

    @admin.display(description="event", ordering="event__name")
    def event_link(self, entry: QueueEntry | WaitlistEntry) -> str:
        return _link("admin:events_event_change", entry.event_id, entry.event.name)


@admin.register(QueueEntry)
class QueueEntryAdmin(_EntryAdmin):
    list_display = (
        "customer_link", "event_link", "status", "order", "joined_at", "admitted_at",
        "admission_expires_at",
    )  # fmt: skip
    list_filter = ("status", "prequeue")
    search_fields = ("customer__email", "=id", "=customer__id")
    list_select_related = ("customer", "event")
    ordering = ("event", "status", "score")
    show_full_result_count = False  # a sale can queue a million: no COUNT(*) per page
    fields = (
        "id", "customer_link", "event_link", "status", "order", "joined_at", "admitted_at",
        "admission_expires_at", "finished_at",
    )  # fmt: skip
    readonly_fields = fields

    @admin.display(description="joined", ordering="score")
    def order(self, entry: QueueEntry) -> str:
        """Pre-queue joiners are shuffled ahead of everyone who came later."""
        return "in the pre-queue (shuffled)" if entry.prequeue else "in line"


@admin.register(WaitlistEntry)
class WaitlistEntryAdmin(_EntryAdmin):
    """Waiting-list entries, read-only like the queue's: they move only
    through the waiting-list services."""

    list_display = (
        "customer_link", "event_link", "tier", "status", "joined_at", "offered_at", "offer_tier",
    )  # fmt: skip
    list_filter = ("status",)
    search_fields = ("customer__email", "=id", "=customer__id")
    list_select_related = ("customer", "event", "tier", "offer_tier")
    ordering = ("event", "status", "score")
    fields = (
        "id", "customer_link", "event_link", "tier", "status", "joined_at", "offered_at",
        "offer_tier", "finished_at",
    )  # fmt: skip
    readonly_fields = fields
