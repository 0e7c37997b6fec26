"""CSV exports of orders and ticket holders, streamed row by row (an event
can sell tens of thousands), amounts in the currency's major unit."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator

from django.db.models import Q, QuerySet
from django.http import StreamingHttpResponse

from claims.domain import (
    ClaimStatus,
    IssuedTicketStatus,
    ticket_code_display,
    ticket_public_status,
)
from claims.models import Claim, IssuedTicket, TicketEvent
from fairqueue.money import money_major
from inventory.models import Ticket

ORDER_COLUMNS = [
    "order", "created_at", "status", "event", "tier", "quantity", "amount", "currency",
    "buyer_email", "payment_reference", "paid_at", "released_at", "release_reason",
]  # fmt: skip
HOLDER_COLUMNS = [
    "ticket", "event", "tier", "holder_email", "order", "paid_at", "code", "status", "history",
]  # fmt: skip

# A cell a spreadsheet would run as a formula (an email may start with "=").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


class _Line:
    """csv.writer's file: hands back each written line instead of storing it."""

    def write(self, line: str) -> str:
        return line


def csv_response(
    filename: str, header: list[str], rows: Iterable[Iterable]
) -> StreamingHttpResponse:
    writer = csv.writer(_Line())

    def lines() -> Iterator[str]:
        yield writer.writerow(header)
        for row in rows:
            yield writer.writerow([_cell(v) for v in row])

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def order_rows(orders: QuerySet[Claim]) -> Iterator[list]:
    orders = orders.select_related("event", "tier", "customer").prefetch_related("payments")
    for order in orders.order_by("created_at", "id").iterator(chunk_size=2000):
        # The payment that settled the order, else its latest attempt.
        payments = sorted(
            order.payments.all(), key=lambda p: (p.status == "CONFIRMED", p.created_at)
        )
        yield [
            order.pk,
            order.created_at.isoformat(),
            order.status,
            order.event.name,
            order.tier.name,
            order.quantity,
            money_major(order.amount, order.currency),
            order.currency,
            order.customer.email,
            payments[-1].reference if payments else "",
            order.confirmed_at.isoformat() if order.confirmed_at else "",
            order.released_at.isoformat() if order.released_at else "",
            order.release_reason,
        ]


def holder_rows(orders: QuerySet[Claim]) -> Iterator[list]:
    """One row per ticket of a paid order: who holds it (a ticket returned
    for resale is still its holder's until someone else has paid for it),
    its code and status, and its history (returned, resold, sent, ... and
    the steps of the tickets it replaced), oldest first."""
    paid = orders.filter(status=ClaimStatus.CONFIRMED)
    tickets = (
        Ticket.objects.filter(Q(claim__in=paid, resale_from__isnull=True) | Q(resale_from__in=paid))
        .select_related("tier__event", "claim__customer", "resale_from__customer")
        .order_by("tier__event__name", "tier__name", "claim__confirmed_at", "id")
    )
    issued = _IssuedByRow()
    for ticket in tickets.iterator(chunk_size=2000):
        claim = ticket.resale_from or ticket.claim
        assert claim is not None  # only tickets of confirmed orders
        code = issued.of(claim, ticket)
        yield [
            ticket.pk,
            ticket.tier.event.name,
            ticket.tier.name,
            claim.customer.email,
            claim.pk,
            claim.confirmed_at.isoformat() if claim.confirmed_at else "",
            ticket_code_display(code.code) if code else "",
            ticket_public_status(code.status, code.void_reason) if code else "",
            _history(code) if code else "",
        ]


class _IssuedByRow:
    """The issued ticket that stands for a ticket row: the same seat on a
    reserved tier, else the purchase's live tickets in seat order."""

    def __init__(self) -> None:
        self._left: dict[object, list[IssuedTicket]] = {}

    def of(self, claim: Claim, row: Ticket) -> IssuedTicket | None:
        if claim.pk not in self._left:
            self._left[claim.pk] = list(
                IssuedTicket.objects.filter(claim_id=claim.pk)
                .exclude(status=IssuedTicketStatus.VOID)
                .order_by("seat")
            )
        left = self._left[claim.pk]
        for ticket in left:
            if not row.label or ticket.seat_label == row.label:
                left.remove(ticket)
                return ticket
        return None


def _history(ticket: IssuedTicket) -> str:
    chain, seen = [], set()
    current: IssuedTicket | None = ticket
    while current is not None and current.pk not in seen:
        seen.add(current.pk)
        chain.append(current.pk)
        current = current.replaces
    steps = TicketEvent.objects.filter(ticket_id__in=chain).order_by("created_at", "id")
    return "; ".join(f"{s.created_at:%Y-%m-%d %H:%M} {s.kind}" for s in steps)


def orders_csv(orders: QuerySet[Claim], filename: str = "orders.csv") -> StreamingHttpResponse:
    return csv_response(filename, ORDER_COLUMNS, order_rows(orders))


def holders_csv(
    orders: QuerySet[Claim], filename: str = "ticket-holders.csv"
) -> StreamingHttpResponse:
    return csv_response(filename, HOLDER_COLUMNS, holder_rows(orders))
