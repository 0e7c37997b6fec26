"""CSV exports of orders and ticket holders, streamed row by row (an event
can sell tens of thousands), amounts in the currency's major unit, tickets
by the code printed on them. A cell a spreadsheet would run as a formula is
written with a leading apostrophe."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from datetime import datetime

from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.utils import timezone

from claims.domain import ClaimStatus, ticket_code_display
from claims.models import Claim, IssuedTicket, TicketEvent
from fairqueue.money import money_major

ORDER_COLUMNS = [
    "order", "created_at", "status", "event", "tier", "quantity", "amount", "currency",
    "buyer_email", "payment_reference", "paid_at", "released_at", "release_reason", "source",
]  # fmt: skip
HOLDER_COLUMNS = [
    "ticket", "event", "tier", "seat", "holder_email", "order", "paid_at", "status",
    "checked_in_at", "checked_in_by", "history",
]  # fmt: skip

# A cell a spreadsheet would run as a formula (an email may start with "=").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _when(moment: datetime | None) -> str:
    """A time as a spreadsheet reads a date and time ("YYYY-MM-DD HH:MM:SS",
    in the site's time zone), not an ISO string it keeps as text."""
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S") if moment else ""


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
            _when(order.created_at),
            order.status,
            order.event.name,
            order.tier.name,
            order.quantity,
            money_major(order.amount, order.currency),
            order.currency,
            order.customer.email,
            payments[-1].reference if payments else "",
            _when(order.confirmed_at),
            _when(order.released_at),
            order.release_reason,
            order.source,
        ]


def holder_rows(orders: QuerySet[Claim]) -> Iterator[list]:
    """One row per ticket issued for a paid order: its printed code, who
    holds it, its seat (reserved tiers: the label; else "n of quantity") and
    whether it was checked in at the door; and its history (returned,
    resold, sent, accepted, ... with the steps of the tickets it replaced),
    oldest first: a resold or transferred ticket stays listed, VOID."""
    tickets = (
        IssuedTicket.objects.filter(claim__in=orders.filter(status=ClaimStatus.CONFIRMED))
        .select_related("event", "tier", "claim")
        .order_by("event__name", "tier__name", "claim__confirmed_at", "claim_id", "seat")
    )
    for ticket in tickets.iterator(chunk_size=2000):
        claim = ticket.claim
        yield [
            ticket_code_display(ticket.code),
            ticket.event.name,
            ticket.tier.name,
            ticket.seat_label or f"{ticket.seat} of {claim.quantity}",
            ticket.holder_email,
            ticket.claim_id,
            _when(claim.confirmed_at),
            ticket.status,
            _when(ticket.checked_in_at),
            ticket.checked_in_by.removeprefix("staff:"),
            _history(ticket),
        ]


def _history(ticket: IssuedTicket) -> str:
    chain, seen = [], set()
    current: IssuedTicket | None = ticket
    while current is not None and current.pk not in seen:
        seen.add(current.pk)
        chain.append(current.pk)
        current = current.replaces
    steps = TicketEvent.objects.filter(ticket_id__in=chain).order_by("created_at", "id")
    return "; ".join(f"{_when(s.created_at)[:16]} {s.kind}" for s in steps)


def orders_csv(orders: QuerySet[Claim], filename: str = "orders.csv") -> StreamingHttpResponse:
    return csv_response(filename, ORDER_COLUMNS, order_rows(orders))


def holders_csv(
    orders: QuerySet[Claim], filename: str = "ticket-holders.csv"
) -> StreamingHttpResponse:
    return csv_response(filename, HOLDER_COLUMNS, holder_rows(orders))
