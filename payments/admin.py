"""Payments in the admin, for staff: find stuck, flagged and
refund-required payments and act on them through the services. Nothing is
edited by hand; the event log is read-only (the database refuses changes to
it anyway).

Viewing needs ``payments.view_payment``; the actions need
``payments.change_payment`` (superusers have both). A user who belongs to an
organizer sees the payments of that organizer's events only, platform staff
all (fairqueue/adminscope.py).
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html

from fairqueue.adminscope import organizer_scope
from fairqueue.errors import AppError
from payments.domain import PaymentStatus
from payments.models import Payment, PaymentEvent, WebhookReceipt
from payments.selectors import stuck_q
from payments.services import payment_fail_and_release, payment_mark_refunded, payment_verify_now


def _actor(request: HttpRequest) -> str:
    return f"staff:{request.user.get_username()}"


class NeedsAttentionFilter(admin.SimpleListFilter):
    title = "needs attention"
    parameter_name = "attention"

    def lookups(self, request, model_admin):
        return [
            ("stuck", "Stuck (INITIALIZING/PENDING past the stale threshold)"),
            ("refund", "Refund required"),
            ("flagged", "Flagged (amount/currency mismatch)"),
        ]

    def queryset(self, request, queryset):
        if self.value() == "stuck":
            return queryset.filter(stuck_q())
        if self.value() == "refund":
            return queryset.filter(status=PaymentStatus.REFUND_REQUIRED)
        if self.value() == "flagged":
            return queryset.filter(~Q(flag_reason=""))
        return queryset


class ReadOnlyMixin:
    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class PaymentEventInline(ReadOnlyMixin, admin.TabularInline):
    model = PaymentEvent
    extra = 0
    can_delete = False
    fields = ("created_at", "kind", "from_status", "to_status", "actor", "data", "raw_body")
    readonly_fields = fields
    ordering = ("created_at", "id")
    show_change_link = False


@admin.register(Payment)
class PaymentAdmin(admin.ModelAdmin):
    list_display = (
        "reference",
        "status",
        "amount",
        "currency",
        "email",
        "claim_link",
        "flagged",
        "gateway_status",
        "created_at",
        "updated_at",
    )
    list_filter = (NeedsAttentionFilter, "status", "currency")
    search_fields = ("=reference", "email", "=claim__id", "=id")
    list_select_related = ("claim",)
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    show_full_result_count = False
    readonly_fields = [*(f.name for f in Payment._meta.fields), "claim_link"]
    inlines = [PaymentEventInline]
    actions = ["verify_with_gateway", "fail_and_release", "mark_refunded"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Payment]:
        return organizer_scope(request, super().get_queryset(request), "claim__event__organizer_id")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Payment | None = None) -> bool:
        return False

    # The change form only shows (every field is read-only); "change"
    # permission is what the actions below require.
    @admin.display(description="claim")
    def claim_link(self, payment: Payment) -> str:
        try:
            url = reverse("admin:claims_claim_change", args=[payment.claim_id])
        except NoReverseMatch:
            return str(payment.claim_id)
        return format_html('<a href="{}">{}</a>', url, payment.claim_id)

    @admin.display(boolean=True, description="flagged")
    def flagged(self, payment: Payment) -> bool:
        return bool(payment.flag_reason)

    def _run(self, request: HttpRequest, queryset: QuerySet[Payment], action, label: str) -> None:
        done, refused = 0, []
        for payment in queryset:
            try:
                action(payment_id=payment.pk, actor=_actor(request))
                done += 1
            except AppError as exc:
                refused.append(f"{payment.reference}: {exc.message}")
        if done:
            self.message_user(request, f"{label}: {done} payment(s).", messages.SUCCESS)
        for line in refused:
            self.message_user(request, line, messages.WARNING)

    @admin.action(description="Verify with the gateway now", permissions=["change"])
    def verify_with_gateway(self, request: HttpRequest, queryset: QuerySet[Payment]) -> None:
        self._run(request, queryset, payment_verify_now, "Verified")

    @admin.action(description="Fail and release the claim", permissions=["change"])
    def fail_and_release(self, request: HttpRequest, queryset: QuerySet[Payment]) -> None:
        self._run(request, queryset, payment_fail_and_release, "Failed and released")

    @admin.action(description="Mark refunded", permissions=["change"])
    def mark_refunded(self, request: HttpRequest, queryset: QuerySet[Payment]) -> None:
        self._run(request, queryset, payment_mark_refunded, "Marked refunded")

    def save_model(self, request, obj, form, change) -> None:
        """Never: payments change only through the services."""

    def save_related(self, request, form, formsets, change) -> None:
        """Never."""


@admin.register(PaymentEvent)
class PaymentEventAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("created_at", "payment", "kind", "from_status", "to_status", "actor")
    list_filter = ("kind", "actor")
    search_fields = ("=payment__reference",)
    list_select_related = ("payment",)
    date_hierarchy = "created_at"
    show_full_result_count = False
    readonly_fields = [f.name for f in PaymentEvent._meta.fields]

    def get_queryset(self, request: HttpRequest) -> QuerySet[PaymentEvent]:
        return organizer_scope(
            request, super().get_queryset(request), "payment__claim__event__organizer_id"
        )


@admin.register(WebhookReceipt)
class WebhookReceiptAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("received_at", "event_type", "reference", "payment")
    list_filter = ("event_type",)
    search_fields = ("=reference",)
    readonly_fields = [f.name for f in WebhookReceipt._meta.fields]

    def get_queryset(self, request: HttpRequest) -> QuerySet[WebhookReceipt]:
        # A receipt for an unknown reference (no payment) names no organizer:
        # platform staff only.
        return organizer_scope(
            request, super().get_queryset(request), "payment__claim__event__organizer_id"
        )
