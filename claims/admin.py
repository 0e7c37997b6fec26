"""Claims in the admin: read-only, for staff granted ``claims.view_claim``
(superusers included). A user who belongs to an organizer sees the claims of
that organizer's events only; platform staff (in no organizer) see all
(fairqueue/adminscope.py). Nothing
is changed from here: claims move only through the claims services."""

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from claims.models import Claim
from fairqueue.adminscope import organizer_scope


class DisputedFilter(admin.SimpleListFilter):
    """Claims whose payment is disputed or was reversed at the bank: staff
    decide on them from the payment's page (their tickets stay valid)."""

    title = "dispute"
    parameter_name = "dispute"

    def lookups(self, request, model_admin):
        return [("disputed", "Disputed (payment disputed or reversed)")]

    def queryset(self, request, queryset):
        if self.value() == "disputed":
            return queryset.filter(disputed_at__isnull=False)
        return queryset


@admin.register(Claim)
class ClaimAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "customer",
        "event",
        "tier",
        "quantity",
        "amount",
        "currency",
        "status",
        "created_at",
        "expires_at",
        "release_reason",
        "disputed_at",
    )
    list_filter = (DisputedFilter, "status", "release_reason")
    search_fields = ("=id", "customer__email", "=customer__id")
    list_select_related = ("customer", "event", "tier")
    raw_id_fields = ("customer", "event", "tier", "queue_entry")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    show_full_result_count = False
    readonly_fields = [f.name for f in Claim._meta.fields]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Claim]:
        return organizer_scope(request, super().get_queryset(request), "event__organizer_id")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Claim | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Claim | None = None) -> bool:
        return False
