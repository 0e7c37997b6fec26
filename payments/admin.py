"""Payments in the admin: find stuck, blocked, overdue, flagged, refund and
disputed payments, read why each needs attention and the purchase's
account, and act on them through the services. Nothing is edited by hand;
the event log is read-only (the database refuses changes to it anyway).
Money is shown in the currency's major unit.

Viewing needs ``payments.view_payment``; the actions need
``payments.change_payment`` (superusers have both). Which payments, by the
tenant rule (fairqueue/adminscope.py): a user who belongs to an organizer
sees the payments of that organizer's events and refunds them; platform
staff see and act on all (money is their work: ``money = True``), and the
stuck-payment tools (verify, fail and release, mark refunded, keep the
tickets, retry a resale refund) are theirs alone (``platform_work``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db import IntegrityError
from django.db.models import Count, QuerySet, Sum
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html, format_html_join

from claims.domain import ReturnStatus, TransferStatus
from claims.models import TicketReturn, TicketTransfer
from claims.services import purchase_balance
from fairqueue.adminscope import is_platform_staff, platform_work
from fairqueue.errors import AppError
from fairqueue.money import money_format
from ledger.domain import Bucket
from ledger.selectors import account_lines
from payments.attention import attention_filters, payment_attention, with_attention_facts
from payments.domain import (
    DISPUTE_NEEDS_STAFF,
    LIVE_STATUSES,
    OPEN_REFUND_STATUSES,
    REFUNDABLE_STATUSES,
    PaymentStatus,
)
from payments.forms import RefundForm, minor_units
from payments.models import GatewayIncident, Payment, PaymentEvent, Refund, WebhookReceipt
from payments.services import (
    payment_fail_and_release,
    payment_keep_tickets,
    payment_mark_refunded,
    payment_refund_by_staff,
    payment_verify_now,
    refundable_amount,
    resale_refund_retry,
)
from payments.services.refunds import GATEWAY

logger = logging.getLogger(__name__)

# A staff action that lost a race to another writer (a unique index said no):
# nothing was written, and the page says so instead of failing.
CHANGED_MEANWHILE = "the payment changed meanwhile: look again"


def actor_of(request: HttpRequest) -> str:
    """Who acted, as the log and the account name them: platform staff, or
    an organizer's member."""
    role = "staff" if is_platform_staff(request.user) else "organizer"
    return f"{role}:{request.user.get_username()}"


def _link(viewname: str, pk: object, text: object) -> str:
    try:
        url = reverse(viewname, args=[pk])
    except NoReverseMatch:
        return str(text)
    return format_html('<a href="{}">{}</a>', url, text)


# The account's buckets in words, in the order staff read them (ledger/domain.py).
_ACCOUNT_SUMMARY = (
    (Bucket.REFUNDED, "Refunded"),
    (Bucket.IN_FLIGHT, "Refund pending"),
    (Bucket.FEE, "Kept as a fee"),
    (Bucket.HELD, "Held for the tickets it holds"),
    (Bucket.OWED, "Owed to the buyer after resales"),
    (Bucket.SENT, "Kept for tickets sent on"),
    (Bucket.LOST, "Taken back by the bank"),
)


def account_context(payment: Payment) -> dict[str, Any]:
    """The payment's purchase's account as the payment page shows it: the
    non-zero figures of its balance and every entry in words."""
    claim = payment.claim
    balance = purchase_balance(claim)
    summary = [("Paid", money_format(balance.taken, claim.currency))] if balance.taken else []
    summary += [
        (label, money_format(balance[bucket], claim.currency))
        for bucket, label in _ACCOUNT_SUMMARY
        if balance[bucket]
    ]
    lines = [
        {
            "when": line.created_at,
            "what": line.label,
            "amount": money_format(line.amount, line.currency) if line.amount else "",
            "tickets": f"{line.tickets:+d}" if line.tickets else "",
            "note": line.note,
            "actor": line.actor,
        }
        for line in account_lines(claim_id=claim.pk)
    ]
    return {
        "summary": summary,
        "tickets": balance.tickets,
        "given_back_twice": balance[Bucket.HELD] < 0,
        "lines": lines,
    }


@dataclass(frozen=True)
class RefundPreview:
    """What a staff refund of one payment does, said before staff act."""

    paid: str  # the payment's amount
    refusal: str  # why it cannot be refunded now; empty when it can
    amount: str  # what it gives back at most ("" when nothing)
    sent: int  # tickets sent on to someone else: they keep them
    resold: int  # tickets resold: their own refund goes to the buyer
    resold_refund: str
    resold_fee: str
    on_resale: int  # tickets on resale now: cancelled with the order


def refund_previews(payments: Iterable[Payment]) -> list[tuple[Payment, RefundPreview]]:
    """Each payment with what its refund would do, read in a few queries."""
    payments = list(payments)
    claims = {p.claim_id for p in payments}
    sent = dict(
        TicketTransfer.objects.filter(ticket__claim_id__in=claims, status=TransferStatus.ACCEPTED)
        .values_list("ticket__claim_id")
        .annotate(n=Count("id"))
    )
    returns: dict[tuple[Any, str], Any] = {
        (row["claim_id"], row["status"]): row
        for row in TicketReturn.objects.filter(
            claim_id__in=claims, status__in=[ReturnStatus.RESOLD, ReturnStatus.ON_RESALE]
        )
        .values("claim_id", "status")
        .annotate(n=Count("id"), owed=Sum("refund_amount"), fee=Sum("fee"))
    }
    busy = set(
        Refund.objects.filter(payment__in=payments, status__in=OPEN_REFUND_STATUSES)
        .exclude(requested_by=GATEWAY)
        .values_list("payment_id", flat=True)
    )
    previews = []
    for payment in payments:
        currency = payment.paid_currency or payment.currency
        refusal = ""
        if payment.status not in REFUNDABLE_STATUSES:
            refusal = f"this payment is {payment.status}: it cannot be refunded."
        elif payment.pk in busy:
            refusal = "a refund of it is still with the gateway: this one waits until it settles."
        amount = refundable_amount(payment) if not refusal else 0
        resold = returns.get((payment.claim_id, ReturnStatus.RESOLD), {})
        on_resale = returns.get((payment.claim_id, ReturnStatus.ON_RESALE), {})
        previews.append((payment, RefundPreview(
            paid=money_format(payment.amount, payment.currency),
            refusal=refusal,
            amount=money_format(amount, currency) if amount else "",
            sent=sent.get(payment.claim_id, 0),
            resold=resold.get("n", 0),
            resold_refund=money_format(resold.get("owed") or 0, currency),
            resold_fee=money_format(resold["fee"], currency) if resold.get("fee") else "",
            on_resale=on_resale.get("n", 0),
        )))  # fmt: skip
    return previews


def refund_page(
    model_admin: admin.ModelAdmin,
    request: HttpRequest,
    previews: list[tuple[Payment, RefundPreview]],
    form: Any,
    *,
    action: str,
    selected: Iterable[Any],
    orders: bool = False,
    unpaid: Iterable[str] = (),
) -> TemplateResponse:
    """The refund's confirmation page, as staff and organizers get it (from
    the payments list or the orders list): what each refund gives back, the
    tickets already checked in, sent on, resold or on resale, and the form.
    ``selected``: the rows the form posts back for ``action``; ``orders``:
    whole orders are refunded (no amount asked); ``unpaid``: orders selected
    with no payment at all."""
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Refund orders" if orders else "Refund through the gateway",
        "opts": model_admin.model._meta,
        # (payment, preview) pairs: the checked-in tag reads the first.
        "payments": previews,
        "form": form,
        "action": action,
        "selected": [str(pk) for pk in selected],
        "orders": orders,
        "unpaid": list(unpaid),
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, "admin/payments/payment/refund.html", context)


def actions_for(payment: Payment) -> list[str]:
    """The actions that apply to this payment now, in the order its advice
    (``payments.attention``) names them: the payment's page offers them."""
    status, disputed = payment.status, payment.dispute in DISPUTE_NEEDS_STAFF
    names = []
    if status in LIVE_STATUSES:
        names += ["verify_with_gateway", "fail_and_release"]
    if status in REFUNDABLE_STATUSES:
        names.append("refund")
    if status in (PaymentStatus.REFUND_REQUIRED, PaymentStatus.REFUND_FAILED) or (
        status == PaymentStatus.CONFIRMED and disputed
    ):
        names.append("mark_refunded")
    if disputed:
        names.append("keep_tickets")
    if status == PaymentStatus.CONFIRMED and any(
        a.key == "refund_failed" for a in payment_attention(payment)
    ):
        names.insert(0, "retry_resale_refund")
    return names


# What ``payment_verify_now`` answers when the gateway told us nothing.
_VERIFY_NOT_DONE = {
    "gateway_unavailable": "the gateway did not answer: try again in a few minutes.",
    "refused": "the gateway would not say (see the open gateway incidents).",
}


class NeedsAttentionFilter(admin.SimpleListFilter):
    title = "needs attention"
    parameter_name = "attention"

    def lookups(self, request, model_admin):
        return [(key, label) for key, (label, _) in attention_filters().items()]

    def queryset(self, request, queryset):
        chosen = attention_filters().get(self.value() or "")
        return queryset.filter(chosen[1]) if chosen else queryset


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


class RefundInline(ReadOnlyMixin, admin.TabularInline):
    model = Refund
    extra = 0
    can_delete = False
    fields = ("created_at", "amount_display", "status", "requested_by", "reason",
              "gateway_refund_id", "gateway_status", "failure_reason")  # fmt: skip
    readonly_fields = fields
    ordering = ("created_at",)

    @admin.display(description="amount")
    def amount_display(self, refund: Refund) -> str:
        return money_format(refund.amount, refund.currency)


@admin.register(Payment)
class PaymentAdmin(admin.ModelAdmin):
    list_display = ("reference", "status", "amount_display", "customer_link", "claim_link",
                    "attention_list", "gateway_status", "created_at")  # fmt: skip
    list_filter = (NeedsAttentionFilter, "status", "currency")
    search_fields = ("=reference", "email", "=claim__id", "=id")
    list_select_related = ("claim", "customer")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    show_full_result_count = False
    fieldsets = (
        (None, {"fields": ("attention_explained",)}),
        ("Payment", {"fields": ("reference", "status", "amount_display", "paid_display",
                                "refunded_display", "customer_link", "claim_link", "event_link",
                                "log_link", "created_at", "confirmed_at", "failed_at")}),
        ("Gateway", {"fields": ("gateway_status", "gateway_transaction_id", "authorization_url",
                                "failure_reason", "flag_reason", "dispute", "disputed_at",
                                "blocked_since", "overdue_at", "verified_at", "checks",
                                "next_check_at")}),
        ("Account", {"fields": ("account_explained",),
                     "description": "Every movement of this purchase's money and tickets, "
                                    "whichever of its payments it went through."}),
    )  # fmt: skip
    readonly_fields = [
        *(f.name for f in Payment._meta.fields),
        "attention_explained", "amount_display", "paid_display", "refunded_display",
        "customer_link", "claim_link", "event_link", "log_link", "account_explained",
    ]  # fmt: skip
    inlines = [RefundInline, PaymentEventInline]
    actions = ["verify_with_gateway", "fail_and_release", "refund", "mark_refunded",
               "keep_tickets", "retry_resale_refund"]  # fmt: skip

    organizer_paths = ("claim__event__organizer_id",)
    money = True

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Payment | None = None) -> bool:
        return False

    def get_fieldsets(self, request: HttpRequest, obj: Payment | None = None) -> list[Any]:
        """No link to the payment log for a user who may not open it (an
        organizer: the log holds the gateway's raw bodies)."""
        fieldsets = list(super().get_fieldsets(request, obj))
        log = self.admin_site._registry.get(PaymentEvent)
        if log is not None and log.has_view_permission(request):
            return fieldsets
        return [
            (name, {**options, "fields": [f for f in options["fields"] if f != "log_link"]})
            for name, options in fieldsets
        ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Payment]:
        # The attention column reads each row's refunds and returns: read
        # with the rows, so a page of payments costs the same queries as one.
        return with_attention_facts(super().get_queryset(request))

    # --- what staff read -------------------------------------------------------
    # The change form only shows (every field is read-only); "change"
    # permission is what the actions below require.
    @admin.display(description="amount", ordering="amount")
    def amount_display(self, payment: Payment) -> str:
        return money_format(payment.amount, payment.currency)

    @admin.display(description="paid (gateway says)")
    def paid_display(self, payment: Payment) -> str:
        if payment.paid_amount is None:
            return "—"
        return money_format(payment.paid_amount, payment.paid_currency or payment.currency)

    @admin.display(description="refunded")
    def refunded_display(self, payment: Payment) -> str:
        return money_format(payment.refunded_amount, payment.paid_currency or payment.currency)

    @admin.display(description="customer")
    def customer_link(self, payment: Payment) -> str:
        return _link("admin:core_customer_change", payment.customer_id, payment.email)

    @admin.display(description="claim")
    def claim_link(self, payment: Payment) -> str:
        claim = payment.claim
        return _link("admin:claims_claim_change", payment.claim_id, f"{claim.status} {claim.pk}")

    @admin.display(description="event")
    def event_link(self, payment: Payment) -> str:
        return _link("admin:events_event_change", payment.claim.event_id, payment.claim.event)

    @admin.display(description="payment log")
    def log_link(self, payment: Payment) -> str:
        try:
            url = reverse("admin:payments_paymentevent_changelist")
        except NoReverseMatch:
            return ""
        count = payment.events.count()
        return format_html(
            '<a href="{}?payment__id__exact={}">{} entries</a> (also below)', url, payment.pk, count
        )

    @admin.display(description="needs attention")
    def attention_list(self, payment: Payment) -> str:
        return ", ".join(a.key for a in payment_attention(payment)) or "—"

    @admin.display(description="needs attention")
    def attention_explained(self, payment: Payment) -> str:
        found = payment_attention(payment)
        if not found:
            return "Nothing: this payment needs no one."
        return format_html_join(
            "",
            "<p><strong>{}</strong><br>{}<br><em>What to do:</em> {}</p>",
            ((a.title, a.meaning, a.what_to_do) for a in found),
        )

    @admin.display(description="the purchase's account")
    def account_explained(self, payment: Payment) -> str:
        # Read only here, on one payment's page: the list never shows it.
        return render_to_string("admin/payments/payment/account.html", account_context(payment))

    # --- what staff and organizers do ----------------------------------------
    # Every action answers with a message per payment, never an error page:
    # a refusal says why (AppError), and a race lost to another writer
    # (IntegrityError: the service's transaction rolled back) says look again.
    # The stuck-payment tools are platform work (fairqueue/adminscope.py);
    # refunding is also the organizer's, on their own events' payments.
    def _run(
        self,
        request: HttpRequest,
        queryset: QuerySet[Payment],
        action: Callable[..., Any],
        label: str,
        not_done: dict[str, str] | None = None,
    ) -> None:
        """``not_done``: answers of ``action`` that mean nothing happened, and why."""
        not_done = not_done or {}
        done, refused = 0, []
        for payment in queryset:
            try:
                answer = action(payment_id=payment.pk, actor=actor_of(request))
                if isinstance(answer, str) and answer in not_done:
                    refused.append(f"{payment.reference}: {not_done[answer]}")
                    continue
                done += 1
            except AppError as exc:
                refused.append(f"{payment.reference}: {exc.message}")
            except IntegrityError:
                logger.exception("staff action on %s refused by the database", payment.reference)
                refused.append(f"{payment.reference}: {CHANGED_MEANWHILE}.")
        if done:
            self.message_user(request, f"{label}: {done} payment(s).", messages.SUCCESS)
        for line in refused:
            self.message_user(request, line, messages.WARNING)

    @platform_work
    @admin.action(description="Verify with the gateway now", permissions=["change"])
    def verify_with_gateway(self, request: HttpRequest, queryset: QuerySet[Payment]) -> None:
        self._run(request, queryset, payment_verify_now, "Verified", _VERIFY_NOT_DONE)

    @platform_work
    @admin.action(description="Fail and release the claim…", permissions=["change"])
    def fail_and_release(self, request: HttpRequest, queryset: QuerySet[Payment]):
        """A confirmation page first says what failing each payment does;
        then each selected payment is failed and its claim released."""
        if "apply" in request.POST:
            self._run(request, queryset, payment_fail_and_release, "Failed and released")
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Fail and release the claim",
            "opts": self.model._meta,
            "payments": [
                (payment, payment.status in LIVE_STATUSES)
                for payment in queryset.select_related("claim")
            ],
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/payments/payment/fail_and_release.html", context)

    @platform_work
    @admin.action(
        description="Mark refunded (money returned outside FairQueue)", permissions=["change"]
    )
    def mark_refunded(self, request: HttpRequest, queryset: QuerySet[Payment]) -> None:
        self._run(request, queryset, payment_mark_refunded, "Marked refunded")

    @platform_work
    @admin.action(description="Keep the tickets (close the dispute flag)", permissions=["change"])
    def keep_tickets(self, request: HttpRequest, queryset: QuerySet[Payment]) -> None:
        self._run(request, queryset, payment_keep_tickets, "Tickets kept")

    @platform_work
    @admin.action(description="Retry the resale refund", permissions=["change"])
    def retry_resale_refund(self, request: HttpRequest, queryset: QuerySet[Payment]) -> None:
        self._run(request, queryset, resale_refund_retry, "Resale refunds asked for again")

    @admin.action(description="Refund through the gateway…", permissions=["change"])
    def refund(self, request: HttpRequest, queryset: QuerySet[Payment]):
        """An intermediate page asks for the amount (empty: all that is left)
        and the reason; then each selected payment is refunded."""
        currencies = {p.paid_currency or p.currency for p in queryset}
        form = RefundForm(
            request.POST if "apply" in request.POST else None,
            currency=next(iter(currencies)) if len(currencies) == 1 else "",
        )
        if form.is_bound and form.is_valid():
            self._refund_each(request, queryset, form)
            return None
        return refund_page(
            self, request, refund_previews(queryset), form, action="refund",
            selected=[p.pk for p in queryset],
        )  # fmt: skip

    def _refund_each(self, request: HttpRequest, queryset: QuerySet[Payment], form) -> None:
        major, reason = form.cleaned_data["amount"], form.cleaned_data["reason"]
        done, refused = [], []
        for payment in queryset:
            amount = None
            if major is not None:
                amount = minor_units(major, payment.paid_currency or payment.currency)
                if amount is None:
                    refused.append(f"{payment.reference}: {major} has too many decimals")
                    continue
            try:
                refund = payment_refund_by_staff(
                    payment_id=payment.pk, actor=actor_of(request), reason=reason, amount=amount
                )
            except AppError as exc:
                refused.append(f"{payment.reference}: {exc.message}")
                continue
            except IntegrityError:
                logger.exception("staff refund of %s refused by the database", payment.reference)
                refused.append(f"{payment.reference}: {CHANGED_MEANWHILE}.")
                continue
            done.append(f"{payment.reference} ({money_format(refund.amount, refund.currency)}, "
                        f"{refund.status.lower()})")  # fmt: skip
        if done:
            self.message_user(request, f"Refunds asked for: {', '.join(done)}.", messages.SUCCESS)
        for line in refused:
            self.message_user(request, line, messages.WARNING)

    # --- the payment's page: the actions its advice names -----------------------
    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ):
        payment = self.get_object(request, object_id)
        offered: list[tuple[str, str]] = []
        if payment is not None:
            mine = self.get_actions(request)
            offered = [
                (name, str(found[2]))
                for name in actions_for(payment)
                if (found := mine.get(name)) is not None
            ]
        extra_context = {**(extra_context or {}), "offered_actions": offered}
        return super().change_view(request, object_id, form_url, extra_context)

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

    organizer_paths = ("payment__claim__event__organizer_id",)
    money = True


@admin.register(Refund)
class RefundAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("created_at", "payment", "amount_display", "status", "requested_by",
                    "gateway_refund_id", "settled_at")  # fmt: skip
    list_filter = ("status", "for_resale", "requested_by")
    search_fields = ("=payment__reference", "=gateway_refund_id")
    list_select_related = ("payment",)
    readonly_fields = [f.name for f in Refund._meta.fields]

    organizer_paths = ("payment__claim__event__organizer_id",)
    money = True

    @admin.display(description="amount")
    def amount_display(self, refund: Refund) -> str:
        return money_format(refund.amount, refund.currency)


class IncidentOpenFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("open", "Open"), ("resolved", "Resolved")]

    def queryset(self, request, queryset):
        if self.value() in ("open", "resolved"):
            return queryset.filter(resolved_at__isnull=self.value() == "open")
        return queryset


@admin.register(GatewayIncident)
class GatewayIncidentAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Platform-wide (the merchant account is one): platform staff granted
    ``payments.view_gatewayincident`` (no ``organizer_paths``: the tenant rule
    shows it to nobody else)."""

    money = True

    list_display = ("operation", "opened_at", "last_seen_at", "failures", "last_http_status",
                    "last_message", "resolved_at")  # fmt: skip
    list_filter = (IncidentOpenFilter, "operation")
    readonly_fields = [f.name for f in GatewayIncident._meta.fields]


@admin.register(WebhookReceipt)
class WebhookReceiptAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("received_at", "event_type", "reference", "payment")
    list_filter = ("event_type",)
    search_fields = ("=reference",)
    readonly_fields = [f.name for f in WebhookReceipt._meta.fields]

    # A receipt for an unknown reference (no payment) names no organizer:
    # platform staff only.
    organizer_paths = ("payment__claim__event__organizer_id",)
    money = True
