"""Queue entries in the admin: read-only, for staff granted
``queueing.view_queueentry`` (superusers included). Organizer users see the
entries of their own events only, platform staff all (fairqueue/adminscope.py).
Nothing is changed from here: entries move only through the queue services."""

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from fairqueue.adminscope import organizer_scope
from queueing.models import QueueEntry


@admin.register(QueueEntry)
class QueueEntryAdmin(admin.ModelAdmin):
    list_display = (
        "customer",
        "event",
        "status",
        "score",
        "prequeue",
        "joined_at",
        "admitted_at",
        "admission_expires_at",
    )
    list_filter = ("status", "prequeue")
    search_fields = ("customer__email", "=id", "=customer__id")
    list_select_related = ("customer", "event")
    raw_id_fields = ("customer", "event")
    ordering = ("event", "status", "score")
    show_full_result_count = False  # a sale can queue a million: no COUNT(*) per page
    readonly_fields = [f.name for f in QueueEntry._meta.fields]

    def get_queryset(self, request: HttpRequest) -> QuerySet[QueueEntry]:
        return organizer_scope(request, super().get_queryset(request), "event__organizer_id")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: QueueEntry | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: QueueEntry | None = None) -> bool:
        return False
