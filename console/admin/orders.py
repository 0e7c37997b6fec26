"""Orders (claims of tickets) and buyers, as the organizer sees them: lists
with search and filters, money in the currency's major unit, links to the
payment pages, CSV exports, releasing unpaid orders and refunding paid ones
through the services. Scoped like every page, by the tenant rule
(fairqueue/adminscope.py): releasing or refunding an order is its
organizer's (or a superuser's) to do; platform staff refund from the
payments pages."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from django.contrib import admin, messages
from django.db import IntegrityError
from django.db.models import Count, Max, Q, QuerySet, Sum
from django.http import HttpRequest, StreamingHttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from claims.domain import ClaimSource, ClaimStatus, ticket_code_display
from claims.models import IssuedTicket
from console.admin.dashboard import may_open
from console.exports import holders_csv, orders_csv
from console.models import Buyer, Order, status_words
from console.services import order_refund, order_release
from fairqueue.adminscope import in_reach, may
from fairqueue.errors import AppError
from fairqueue.money import money_format
from payments.admin import actor_of, refund_page, refund_previews
from payments.forms import OrderRefundForm
from payments.models import Payment
from payments.selectors import payments_to_refund

logger = logging.getLogger(__name__)

# The order's own page names its actions for the one order.
ORDER_PAGE_LABELS = {
    "refund_orders": "Refund this order…",
    "release_unpaid": "Release this order (tickets back to sale)",
}


class ReadOnly:
    """Rows change only through services (actions), never through a form."""

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


def payments_link(claim_id: object, label: str) -> str:
    url = reverse("admin:payments_payment_changelist") + f"?claim__id__exact={claim_id}"
    return format_html('<a href="{}">{}</a>', url, label)


def _door_state(ticket: IssuedTicket) -> str:
    if ticket.checked_in_at:
        moment = timezone.localtime(ticket.checked_in_at).strftime("%d %b %Y %H:%M")
        return f"checked in {moment}"
    return {"VALID": "not checked in", "VOID": "void"}.get(ticket.status, ticket.status.lower())


@admin.register(Order)
class OrderAdmin(ReadOnly, admin.ModelAdmin):
    list_display = (
        "short_id", "created_at", "state", "event", "tier", "quantity", "total", "buyer",
        "payment",
    )  # fmt: skip
    list_filter = (
        "status", "source", ("event", admin.RelatedOnlyFieldListFilter), "release_reason",
    )  # fmt: skip
    search_fields = ("customer__email", "=id", "=payments__reference")
    search_help_text = "Buyer email, order id or payment reference."
    list_select_related = ("event", "tier", "customer")
    date_hierarchy = "created_at"
    show_full_result_count = False
    fields = (
        "id", "state", "event", "tier", "quantity", "total", "buyer", "tickets", "payment",
        "created_at", "expires_at", "confirmed_at", "released_at", "release_reason",
        "payment_in_flight",
    )  # fmt: skip
    readonly_fields = fields
    actions = ["refund_orders", "release_unpaid", "export_orders", "export_holders"]
    organizer_paths = ("event__organizer_id",)

    def has_release_permission(self, request: HttpRequest) -> bool:
        # The action runs on the selected orders the user may change (the site
        # narrows them); it is offered only to one who may change some.
        return request.user.has_perm("console.change_order") and may(request, change=True)

    def has_refund_permission(self, request: HttpRequest) -> bool:
        """Refunding is money: it needs the payments' change permission as
        well as the orders'."""
        user = request.user
        return (
            user.has_perm("console.change_order")
            and user.has_perm("payments.change_payment")
            and may(request, change=True)
        )

    @admin.display(description="order", ordering="id")
    def short_id(self, order: Order) -> str:
        return str(order.pk)[:8]

    @admin.display(description="status", ordering="status")
    def state(self, order: Order) -> str:
        word = status_words(order)
        if order.status == ClaimStatus.RELEASED and order.release_reason:
            return f"{word} ({order.get_release_reason_display().lower()})"
        if order.status == ClaimStatus.CLAIMED and order.payment_in_flight:
            return f"{word} (payment in flight)"
        return word

    @admin.display(description="total", ordering="amount")
    def total(self, order: Order) -> str:
        if order.source == ClaimSource.TRANSFER:
            return "nothing paid (sent by its holder)"
        return money_format(order.amount, order.currency)

    @admin.display(description="buyer", ordering="customer__email")
    def buyer(self, order: Order) -> str:
        url = reverse("admin:console_buyer_change", args=[order.customer_id])
        return format_html('<a href="{}">{}</a>', url, order.customer.email)

    @admin.display(description="tickets")
    def tickets(self, order: Order) -> str:
        """Each ticket issued for the order: its printed code (linking to
        the ticket's page), seat and state at the door."""
        issued = list(IssuedTicket.objects.filter(claim_id=order.pk).order_by("seat", "issued_at"))
        if not issued:
            return "none issued (tickets are issued when the order is paid)"
        rows = format_html_join(
            "",
            '<li><a href="{}" style="font:600 15px/1.8 ui-monospace,monospace">{}</a>'
            " · {} · {}</li>",
            (
                (
                    reverse("ticket-page", args=[t.code]),
                    ticket_code_display(t.code),
                    t.seat_label or f"ticket {t.seat} of {order.quantity}",
                    _door_state(t),
                )
                for t in issued
            ),
        )
        return format_html(
            '<ul class="fq-order-tickets" style="margin:0;padding:0;list-style:none">{}</ul>', rows
        )

    @admin.display(description="payment")
    def payment(self, order: Order) -> str:
        return payments_link(order.pk, "payments")

    @admin.display(description="payment")
    def payment_read(self, order: Order) -> str:
        """The order's payments as text, for a user who may not open the
        payments pages (organizers: money is platform staff's work)."""
        payments = list(order.payments.order_by("created_at"))
        if not payments:
            return "none"
        return format_html_join(
            "", "<div><code>{}</code> · {} · {}</div>",
            ((p.reference, p.get_status_display(), money_format(p.amount, p.currency))
             for p in payments),
        )  # fmt: skip

    def _payments_field(self, request: HttpRequest, names: Sequence[Any]) -> list[Any]:
        if may_open(self, request, Payment):
            return list(names)
        return ["payment_read" if name == "payment" else name for name in names]

    def get_list_display(self, request: HttpRequest) -> list[Any]:
        return self._payments_field(request, super().get_list_display(request))

    def get_fields(self, request: HttpRequest, obj: Order | None = None) -> list[Any]:
        return self._payments_field(
            request, self._for_status(super().get_fields(request, obj), obj)
        )

    def get_readonly_fields(self, request: HttpRequest, obj: Order | None = None) -> list[Any]:
        fields = self._for_status(super().get_readonly_fields(request, obj), obj)
        return self._payments_field(request, fields)

    @staticmethod
    def _for_status(names: Sequence[Any], order: Order | None) -> list[Any]:
        """Only the times that apply: a hold's expiry and its payment in
        flight while it awaits payment, the payment's time once paid, the
        release once released."""
        if order is None:
            return list(names)
        status = ClaimStatus(order.status)
        unshown = set()
        if status != ClaimStatus.CLAIMED:
            unshown |= {"expires_at", "payment_in_flight"}
        if status != ClaimStatus.RELEASED:
            unshown |= {"released_at", "release_reason"}
        if order.confirmed_at is None:
            unshown.add("confirmed_at")
        return [name for name in names if name not in unshown]

    # -- actions ------------------------------------------------------------------

    def _each(
        self, request: HttpRequest, orders: QuerySet[Order], act: Callable[[Order], object]
    ) -> tuple[int, list[str]]:
        done, refused = 0, []
        for order in orders:
            try:
                act(order)
            except AppError as exc:
                refused.append(f"{str(order.pk)[:8]}: {exc.message}")
            else:
                done += 1
        return done, refused

    @admin.action(description="Refund paid orders…", permissions=["refund"])
    def refund_orders(self, request: HttpRequest, queryset: QuerySet[Order]):
        """A confirmation page first says what each refund gives back and
        what becomes of the tickets (checked in, sent on, resold, on
        resale); then each order is refunded through the payment that paid
        it, and cancelled."""
        orders = list(queryset.select_related("event"))
        if not orders:
            self.message_user(request, "No order of yours was selected.", messages.WARNING)
            return None
        form = OrderRefundForm(request.POST if "apply" in request.POST else None)
        if form.is_bound and form.is_valid():
            self._refund_each(request, orders, form.cleaned_data["reason"])
            return None
        payments = payments_to_refund(claim_ids=[order.pk for order in orders])
        return refund_page(
            self, request, refund_previews(payments.values()), form,
            action="refund_orders", selected=[order.pk for order in orders], orders=True,
            unpaid=[str(order.pk)[:8] for order in orders if order.pk not in payments],
        )  # fmt: skip

    def _refund_each(self, request: HttpRequest, orders: list[Order], reason: str) -> None:
        actor = actor_of(request)
        done, refused = [], []
        for order in orders:
            name = str(order.pk)[:8]
            try:
                refund = order_refund(claim_id=order.pk, actor=actor, reason=reason)
            except AppError as exc:
                refused.append(f"{name}: {exc.message}")
                continue
            except IntegrityError:
                logger.exception("refund of order %s refused by the database", order.pk)
                refused.append(f"{name}: the order changed meanwhile: look again.")
                continue
            amount = money_format(refund.amount, refund.currency)
            done.append(f"{name} ({amount}, {refund.status.lower()})")
        if done:
            self.message_user(request, f"Refunds asked for: {', '.join(done)}.", messages.SUCCESS)
        for line in refused:
            self.message_user(request, line, messages.WARNING)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ):
        """The order's page offers what may be done to it now."""
        order = self.get_object(request, object_id)
        offered: list[tuple[str, str]] = []
        if order is not None:
            mine = self.get_actions(request)
            wanted = {
                ClaimStatus.CONFIRMED: "refund_orders",
                ClaimStatus.CLAIMED: "release_unpaid",
            }.get(ClaimStatus(order.status))
            if order.source == ClaimSource.TRANSFER:
                wanted = None  # nothing was paid for it: nothing to refund or release
            if wanted and wanted in mine:
                offered.append((wanted, ORDER_PAGE_LABELS[wanted]))
        extra_context = {
            **(extra_context or {}),
            "offered_actions": offered,
            "changelist_url": reverse("admin:console_order_changelist") + f"?q={order.pk}"
            if order is not None
            else "",
        }
        return super().change_view(request, object_id, form_url, extra_context)

    @admin.action(
        description="Release unpaid orders (tickets back to sale)", permissions=["release"]
    )
    def release_unpaid(self, request: HttpRequest, queryset: QuerySet[Order]) -> None:
        actor = f"staff:{request.user.get_username()}"
        done, refused = self._each(
            request, queryset, lambda order: order_release(claim_id=order.pk, actor=actor)
        )
        if done:
            self.message_user(request, f"Released {done} order(s).", messages.SUCCESS)
        for line in refused:
            self.message_user(request, line, messages.WARNING)

    @admin.action(description="Export orders (CSV)", permissions=["view"])
    def export_orders(
        self, request: HttpRequest, queryset: QuerySet[Order]
    ) -> StreamingHttpResponse:
        return orders_csv(queryset)

    @admin.action(description="Export ticket holders (CSV)", permissions=["view"])
    def export_holders(
        self, request: HttpRequest, queryset: QuerySet[Order]
    ) -> StreamingHttpResponse:
        return holders_csv(queryset)


@admin.register(Buyer)
class BuyerAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("email", "orders", "tickets", "last_order")
    search_fields = ("email",)
    search_help_text = "Email."
    show_full_result_count = False
    fields = ("email", "orders", "tickets", "last_order", "created_at")
    readonly_fields = fields
    actions = ["export_orders"]
    organizer_paths = ("claims__event__organizer_id",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Buyer]:
        """Customers with an order for one of the user's events; the counts
        only count those orders."""
        mine = in_reach(request, Order.objects.all(), "event__organizer_id")
        paid = Q(claims__status=ClaimStatus.CONFIRMED, claims__source=ClaimSource.SALE)
        return (
            super()
            .get_queryset(request)
            .filter(claims__in=mine)
            .annotate(
                orders_n=Count("claims", distinct=True),
                tickets_n=Sum("claims__quantity", filter=paid),
                last_order_at=Max("claims__created_at"),
            )
        )

    @admin.display(description="orders", ordering="orders_n")
    def orders(self, buyer: Buyer) -> str:
        url = reverse("admin:console_order_changelist") + f"?customer__id__exact={buyer.pk}"
        count = buyer.orders_n  # type: ignore[attr-defined]  # get_queryset's annotation
        return format_html('<a href="{}">{}</a>', url, count)

    @admin.display(description="tickets paid", ordering="tickets_n")
    def tickets(self, buyer: Buyer) -> int:
        return buyer.tickets_n or 0  # type: ignore[attr-defined]  # get_queryset's annotation

    @admin.display(description="last order", ordering="last_order_at")
    def last_order(self, buyer: Buyer) -> object:
        return buyer.last_order_at  # type: ignore[attr-defined]  # get_queryset's annotation

    @admin.action(description="Export their orders (CSV)", permissions=["view"])
    def export_orders(
        self, request: HttpRequest, queryset: QuerySet[Buyer]
    ) -> StreamingHttpResponse:
        mine = in_reach(request, Order.objects.all(), "event__organizer_id")
        return orders_csv(mine.filter(customer__in=queryset.values("pk")))
