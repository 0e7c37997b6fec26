"""Claims in the admin: read-only, for staff granted ``claims.view_claim``
(superusers included). A user who belongs to an organizer sees the claims of
that organizer's events only; platform staff see all (the tenant rule,
fairqueue/adminscope.py). Nothing is changed from here: claims move only
through the claims services. Money in the currency's major unit; the
customer, event, queue entry and payments are links."""

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from claims.domain import ClaimStatus
from claims.models import Claim, TicketReturn, TicketTransfer
from fairqueue.money import money_format


def _link(route: str, pk: object, label: object) -> str:
    return format_html('<a href="{}">{}</a>', reverse(route, args=[pk]), label)


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
        "short_id", "customer_link", "event_link", "tier_name", "quantity", "total",
        "state", "created_at", "expires_at", "payments_link", "disputed_at",
    )  # fmt: skip
    list_filter = (DisputedFilter, "status", "release_reason", "payment_in_flight")
    search_fields = ("=id", "customer__email", "=customer__id")
    list_select_related = ("customer", "event", "tier")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    show_full_result_count = False
    fields = (
        "id", "state", "customer_link", "event_link", "tier_name", "quantity", "total",
        "payments_link", "in_flight", "queue_entry_link", "created_at", "expires_at",
        "confirmed_at", "released_at",
    )  # fmt: skip
    readonly_fields = fields
    organizer_paths = ("event__organizer_id",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Claim | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Claim | None = None) -> bool:
        return False

    @admin.display(description="claim", ordering="id")
    def short_id(self, claim: Claim) -> str:
        return str(claim.pk)[:8]

    @admin.display(description="status", ordering="status")
    def state(self, claim: Claim) -> str:
        if claim.status == ClaimStatus.RELEASED and claim.release_reason:
            return f"{claim.status} ({claim.get_release_reason_display().lower()})"
        return claim.status

    @admin.display(description="customer", ordering="customer__email")
    def customer_link(self, claim: Claim) -> str:
        return _link("admin:core_customer_change", claim.customer_id, claim.customer.email)

    @admin.display(description="event", ordering="event__name")
    def event_link(self, claim: Claim) -> str:
        return _link("admin:events_event_change", claim.event_id, claim.event.name)

    @admin.display(description="tier", ordering="tier__name")
    def tier_name(self, claim: Claim) -> str:
        return claim.tier.name

    @admin.display(description="amount", ordering="amount")
    def total(self, claim: Claim) -> str:
        return money_format(claim.amount, claim.currency)

    @admin.display(description="payments")
    def payments_link(self, claim: Claim) -> str:
        url = reverse("admin:payments_payment_changelist") + f"?claim__id__exact={claim.pk}"
        return format_html('<a href="{}">payments of this claim</a>', url)

    @admin.display(description="payment in flight")
    def in_flight(self, claim: Claim) -> str:
        if claim.payment_in_flight:
            return "yes: expiry waits for the gateway's answer before releasing it"
        return "no"

    @admin.display(description="queue entry")
    def queue_entry_link(self, claim: Claim) -> str:
        if claim.queue_entry_id is None:
            return "-"
        return _link("admin:queueing_queueentry_change", claim.queue_entry_id, "the admission")


class _ReadOnly(admin.ModelAdmin):
    """Returns and transfers move only through the claims services."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(TicketReturn)
class TicketReturnAdmin(_ReadOnly):
    """Returns, resales and the refunds they brought (the refund's own page
    is under payments' refunds)."""

    list_display = (
        "created_at", "event", "holder", "seat", "status", "refund", "fee_kept", "resold_at",
        "refund_id",
    )  # fmt: skip
    list_filter = ("status", "event")
    search_fields = ("ticket__holder_email", "=ticket__code")
    list_select_related = ("ticket", "event")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    organizer_paths = ("event__organizer_id",)

    @admin.display(description="holder", ordering="ticket__holder_email")
    def holder(self, ret: TicketReturn) -> str:
        return ret.ticket.holder_email

    @admin.display(description="seat")
    def seat(self, ret: TicketReturn) -> str:
        return ret.ticket.seat_label or str(ret.ticket.seat)

    @admin.display(description="refund", ordering="refund_amount")
    def refund(self, ret: TicketReturn) -> str:
        return money_format(ret.refund_amount, ret.currency)

    @admin.display(description="fee kept", ordering="fee")
    def fee_kept(self, ret: TicketReturn) -> str:
        return money_format(ret.fee, ret.currency)


@admin.register(TicketTransfer)
class TicketTransferAdmin(_ReadOnly):
    list_display = ("created_at", "event", "sender", "to_email", "status", "ended_at")
    list_filter = ("status", "event")
    search_fields = ("to_email", "sender__email", "=ticket__code")
    list_select_related = ("sender", "event")
    ordering = ("-created_at",)
    organizer_paths = ("event__organizer_id",)
