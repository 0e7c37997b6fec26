"""After the sell-out, as the organizer sees it: who waits on the waiting
list (their place, the tier wanted, an offer and until when) and the
tickets returned for resale (the ticket, where its return stands, the
refund and where that stands). Read-only: both move only through their
services. Scoped like every page, by the tenant rule
(fairqueue/adminscope.py)."""

from __future__ import annotations

from datetime import datetime

from django.contrib import admin
from django.db.models import (
    Case,
    Count,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from claims.domain import ReturnStatus, ticket_code_display
from claims.services.resold import NOTHING_OWED
from console.admin.orders import ReadOnly
from console.models import Return, WaitingListEntry
from fairqueue.money import money_format
from payments.domain import RefundStatus
from payments.models import Refund
from queueing.domain import WaitlistStatus

W = WaitlistStatus


def _when(moment: datetime | None) -> str:
    """A moment as a date a person reads ("2 Dec 14:05", with the year when
    it is not this one), never an ISO string."""
    if moment is None:
        return "—"
    local = timezone.localtime(moment)
    same_year = local.year == timezone.localdate().year
    return local.strftime("%-d %b %H:%M" if same_year else "%-d %b %Y %H:%M")


def _counted(rows: QuerySet) -> Coalesce:
    return Coalesce(
        Subquery(rows.order_by().values("event_id").annotate(n=Count("pk")).values("n")[:1]),
        0,
        output_field=IntegerField(),
    )


def with_places(entries: QuerySet) -> QuerySet:
    """Each waiting entry's place, as its customer reads it: 1 + the waiting
    entries before it that a freed ticket would go to first (for a tier,
    those wanting it or any tier; for any tier, all)."""
    ahead = WaitingListEntry.objects.filter(event_id=OuterRef("event_id"), status=W.WAITING).filter(
        Q(score__lt=OuterRef("score")) | Q(score=OuterRef("score"), id__lt=OuterRef("id"))
    )
    for_tier = ahead.filter(Q(tier_id=OuterRef("tier_id")) | Q(tier__isnull=True))
    return entries.annotate(
        place=Case(
            When(~Q(status=W.WAITING) | Q(drawn=True, score=0), then=Value(None)),
            When(tier__isnull=True, then=_counted(ahead) + 1),
            default=_counted(for_tier) + 1,
            output_field=IntegerField(),
        )
    )


@admin.register(WaitingListEntry)
class WaitingListAdmin(ReadOnly, admin.ModelAdmin):
    # Few, narrow columns: the list fits beside the admin's menu and filters.
    list_display = ("place_shown", "email", "tier_wanted", "state")
    list_filter = ("status", ("event", admin.RelatedOnlyFieldListFilter))
    search_fields = ("customer__email",)
    search_help_text = "Email."
    list_select_related = ("customer", "event", "tier", "offer_tier", "queue_entry")
    ordering = ("event", "status", "score", "id")
    show_full_result_count = False
    fields = ("email", "event", "tier_wanted", "state", "place_shown", "joined", "ended")
    readonly_fields = fields
    organizer_paths = ("event__organizer_id",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[WaitingListEntry]:
        return with_places(super().get_queryset(request))

    @admin.display(description="place", ordering="score")
    def place_shown(self, entry: WaitingListEntry) -> str:
        place = getattr(entry, "place", None)
        if place is not None:
            return str(place)
        if entry.status == W.WAITING:
            return "drawn when the first minute is up"
        return "—"

    @admin.display(description="customer", ordering="customer__email")
    def email(self, entry: WaitingListEntry) -> str:
        return entry.customer.email

    @admin.display(description="tier wanted", ordering="tier__sort_order")
    def tier_wanted(self, entry: WaitingListEntry) -> str:
        return entry.tier.name if entry.tier is not None else "any tier"

    @admin.display(description="status", ordering="status")
    def state(self, entry: WaitingListEntry) -> str:
        """Where the entry stands, with its offer (the ticket, and until when
        while it is open)."""
        offer = f"1 x {entry.offer_tier.name if entry.offer_tier is not None else 'ticket'}"
        if entry.status == W.WAITING:
            return f"waiting since {_when(entry.joined_at)}"
        if entry.status == W.OFFERED and entry.queue_entry is not None:
            return f"offered {offer}, open until {_when(entry.queue_entry.admission_expires_at)}"
        if entry.status == W.ACCEPTED:
            return f"took the {offer} offered"
        if entry.status == W.LAPSED:
            return f"let the {offer} offered lapse"
        return entry.get_status_display().lower()

    @admin.display(description="joined", ordering="joined_at")
    def joined(self, entry: WaitingListEntry) -> str:
        return _when(entry.joined_at)

    @admin.display(description="ended")
    def ended(self, entry: WaitingListEntry) -> str:
        return _when(entry.finished_at)


# Where a resale's refund stands, in the buyer's words (the ticket page's).
_REFUND_WORDS = {
    RefundStatus.REQUESTED: "on its way",
    RefundStatus.PENDING: "on its way",
    RefundStatus.PROCESSED: "paid back",
    RefundStatus.FAILED: "failed (platform staff retry it)",
}
_RETURN_WORDS = {
    ReturnStatus.ON_RESALE: "on resale",
    ReturnStatus.WITHDRAWN: "withdrawn",
    ReturnStatus.RESOLD: "resold",
    ReturnStatus.CANCELLED: "ended with its order's cancellation",
}


@admin.register(Return)
class ReturnAdmin(ReadOnly, admin.ModelAdmin):
    # Few, narrow columns: the list fits beside the admin's menu and filters.
    list_display = ("ticket_code", "state", "refund", "fee_kept")
    list_filter = ("status", ("event", admin.RelatedOnlyFieldListFilter))
    search_fields = ("ticket__holder_email", "=ticket__code")
    search_help_text = "Holder's email, or the ticket's code as printed without its dashes."
    list_select_related = ("ticket", "event")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    show_full_result_count = False
    fields = ("ticket_code", "holder", "event", "state", "refund", "fee_kept", "returned")
    readonly_fields = fields
    organizer_paths = ("event__organizer_id",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Return]:
        refund = Refund.objects.filter(pk=OuterRef("refund_id"))
        return (
            super()
            .get_queryset(request)
            .annotate(refund_status=Subquery(refund.values("status")[:1]))
        )

    @admin.display(description="ticket and holder", ordering="ticket__code")
    def ticket_code(self, ret: Return) -> str:
        ticket = ret.ticket
        seat = f" · seat {ticket.seat_label}" if ticket.seat_label else ""
        return format_html(
            '<a href="{}" style="font-family:ui-monospace,monospace;white-space:nowrap">{}</a>{}'
            "<br><small>{}</small>",
            reverse("ticket-page", args=[ticket.code]),
            ticket_code_display(ticket.code),
            seat,
            ticket.holder_email,
        )

    @admin.display(description="returned", ordering="created_at")
    def returned(self, ret: Return) -> str:
        return _when(ret.created_at)

    @admin.display(description="holder", ordering="ticket__holder_email")
    def holder(self, ret: Return) -> str:
        return ret.ticket.holder_email

    @admin.display(description="status", ordering="status")
    def state(self, ret: Return) -> str:
        words = _RETURN_WORDS.get(ReturnStatus(ret.status), ret.status)
        if ret.status == ReturnStatus.ON_RESALE:
            return f"{words} since {_when(ret.created_at)}"
        ended = ret.resold_at or ret.ended_at
        return f"{words} {_when(ended)}" if ended else words

    @admin.display(description="refund to the holder", ordering="refund_amount")
    def refund(self, ret: Return) -> str:
        amount = money_format(ret.refund_amount, ret.currency)
        if ret.status == ReturnStatus.ON_RESALE:
            return f"{amount} once resold"
        if ret.status != ReturnStatus.RESOLD:
            return "none"
        if ret.end_reason == NOTHING_OWED:
            return "none: the bank took the money back"
        status = getattr(ret, "refund_status", None)
        if status is None:
            return f"{amount}, due"
        return f"{amount}, {_REFUND_WORDS.get(RefundStatus(status), status.lower())}"

    @admin.display(description="fee kept", ordering="fee")
    def fee_kept(self, ret: Return) -> str:
        if ret.status != ReturnStatus.RESOLD:
            return "—"
        return money_format(ret.fee, ret.currency)
