"""Queue entries in the admin: read-only, for staff granted
``queueing.view_queueentry`` (superusers included). Organizer users see the
entries of their own events only, platform staff all (the tenant rule,
fairqueue/adminscope.py).
Nothing is changed from here: entries move only through the queue services.
The customer and the event are links."""

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from queueing.models import QueueEntry


def _link(route: str, pk: object, label: object) -> str:
    return format_html('<a href="{}">{}</a>', reverse(route, args=[pk]), label)


@admin.register(QueueEntry)
class QueueEntryAdmin(admin.ModelAdmin):
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
    organizer_paths = ("event__organizer_id",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: QueueEntry | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: QueueEntry | None = None) -> bool:
        return False

    @admin.display(description="customer", ordering="customer__email")
    def customer_link(self, entry: QueueEntry) -> str:
        return _link("admin:core_customer_change", entry.customer_id, entry.customer.email)

    @admin.display(description="event", ordering="event__name")
    def event_link(self, entry: QueueEntry) -> str:
        return _link("admin:events_event_change", entry.event_id, entry.event.name)

    @admin.display(description="joined", ordering="score")
    def order(self, entry: QueueEntry) -> str:
        """Pre-queue joiners are shuffled ahead of everyone who came later."""
        return "in the pre-queue (shuffled)" if entry.prequeue else "in line"
