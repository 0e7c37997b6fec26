"""Customers in the admin: read-only, for staff granted ``core.view_customer``
(superusers included). Which customers, by the tenant rule
(fairqueue/adminscope.py): platform staff all; an organizer's member only the
customers who queued for or claimed tickets of that organizer's events (the
same people its queue entries and claims already name); anyone else none."""

from django.contrib import admin
from django.http import HttpRequest

from customers.models import Customer


@admin.register(Customer)
class CustomerAdmin(admin.ModelAdmin):
    list_display = ("email", "id", "created_at")
    search_fields = ("email",)
    readonly_fields = ("id", "email", "created_at")
    date_hierarchy = "created_at"
    show_full_result_count = False  # no COUNT(*) over a large table on every page
    organizer_paths = ("claims__event__organizer_id", "queue__event__organizer_id")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Customer | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Customer | None = None) -> bool:
        return False
