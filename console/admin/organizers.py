"""Organizers and their members: membership decides what a user may see, so
only superusers change it. A member sees their own organizers, platform
staff all (the tenant rule, applied by the site)."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from events.models import Organizer


@admin.register(Organizer)
class OrganizerAdmin(admin.ModelAdmin):
    list_display = ("name", "member_count", "created_at")
    search_fields = ("name",)
    filter_horizontal = ("members",)
    organizer_paths = ("id",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Organizer]:
        return super().get_queryset(request).annotate(member_count_n=Count("members"))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_change_permission(self, request: HttpRequest, obj: Organizer | None = None) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj: Organizer | None = None) -> bool:
        return request.user.is_superuser

    @admin.display(description="members", ordering="member_count_n")
    def member_count(self, organizer: Organizer) -> int:
        return organizer.member_count_n  # type: ignore[attr-defined]  # get_queryset's annotation
