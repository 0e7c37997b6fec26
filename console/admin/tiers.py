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
from console.admin.scope import manages, organizer_ids
from events.domain import EventStatus
from events.models import Event, TicketTier, TierKind


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

    def get_queryset(self, request: HttpRequest) -> QuerySet[TicketTier]:
        qs = super().get_queryset(request)
        if request.user.is_superuser:
            return qs
        return qs.filter(event__organizer__in=organizer_ids(request))

    def _editable(self, request: HttpRequest, obj: Event | None) -> bool:
        return manages(request, obj) and (obj is None or obj.status != EventStatus.ENDED)

    def has_view_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return super().has_view_permission(request, obj) and manages(request, obj)

    def has_add_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return super().has_add_permission(request, obj) and self._editable(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return super().has_change_permission(request, obj) and self._editable(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        # Only a draft's tiers may go: nobody can hold their tickets yet.
        draft = obj is None or obj.status == EventStatus.DRAFT
        return super().has_delete_permission(request, obj) and manages(request, obj) and draft

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
