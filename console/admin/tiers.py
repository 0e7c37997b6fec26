"""Ticket tiers, inline on the event page, with their live ticket counts."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from claims.selectors import tier_ticket_counts
from console.admin.forms import TierInlineForm
from events.domain import EventStatus
from events.models import Event, TicketTier, TierKind
from fairqueue.adminscope import in_reach, may


class TicketTierInline(admin.TabularInline):
    model = TicketTier
    form = TierInlineForm
    fields = ("name", "price", "inventory", "sort_order", "sold", "claimed", "free", "seats")
    readonly_fields = ("sold", "claimed", "free", "seats")
    extra = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Inline instances live for one request: a safe place for a cache.
        self._counts: dict[object, dict] = {}

    def get_extra(self, request: HttpRequest, obj: Event | None = None, **kwargs: Any) -> int:
        return 1 if obj is None else 0

    # Inlines are not registered on the site: the tenant rule is asked here,
    # about the event the tiers belong to.
    def get_queryset(self, request: HttpRequest) -> QuerySet[TicketTier]:
        return in_reach(request, super().get_queryset(request), "event__organizer_id")

    def _may(self, request: HttpRequest, obj: Event | None, *, change: bool) -> bool:
        return may(request, obj.organizer_id if obj is not None else None, change=change)

    def _editable(self, request: HttpRequest, obj: Event | None) -> bool:
        ended = obj is not None and obj.status == EventStatus.ENDED
        return self._may(request, obj, change=True) and not ended

    def has_view_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return super().has_view_permission(request, obj) and self._may(request, obj, change=False)

    def has_add_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return super().has_add_permission(request, obj) and self._editable(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return super().has_change_permission(request, obj) and self._editable(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        # Only a draft's tiers may go: nobody can hold their tickets yet.
        draft = obj is None or obj.status == EventStatus.DRAFT
        allowed = super().has_delete_permission(request, obj)
        return allowed and self._may(request, obj, change=True) and draft

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

    @admin.display(description="seats")
    def seats(self, tier: TicketTier) -> str:
        """The tier's seat map page (reserved seating), or the way to make one."""
        if tier._state.adding:
            return "-"
        url = reverse("admin:events_event_seat_map", args=[tier.event_id, tier.pk])
        text = "seat map" if tier.kind == TierKind.RESERVED else "make reserved"
        return format_html('<a href="{}">{}</a>', url, text)
