"""Reads the customer pages and the catalogue API share."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, fields
from datetime import datetime

from django.db.models import Model, QuerySet
from django.utils import timezone

from claims.domain import (
    HOLDING_STATUSES,
    ClaimStatus,
    IssuedTicketStatus,
    ticket_code_normalize,
)
from claims.models import Claim, IssuedTicket
from events.models import Event, TicketTier
from fairqueue.db import prepared_cursor
from payments.domain import PaymentStatus
from payments.models import Payment


def claim_latest_for_customer(
    *, event_id: uuid.UUID | str, customer_id: uuid.UUID | str
) -> Claim | None:
    """The customer's claim for the event that holds tickets (CLAIMED or
    CONFIRMED: at most one, invariant 6), else their most recent one."""
    claims = Claim.objects.filter(event_id=event_id, customer_id=customer_id).select_related("tier")
    holding = claims.filter(status__in=HOLDING_STATUSES).first()
    return holding or claims.order_by("-created_at").first()


def claims_held_by_customer(*, customer_id: uuid.UUID | str) -> QuerySet[Claim]:
    """The customer's claims holding tickets unpaid (CLAIMED, not expired; at
    most one per event), soonest expiry first."""
    return (
        Claim.objects.filter(
            customer_id=customer_id, status=ClaimStatus.CLAIMED, expires_at__gt=timezone.now()
        )
        .select_related("event")
        .order_by("expires_at")
    )


def payment_latest_for_claim(*, claim_id: uuid.UUID | str) -> Payment | None:
    return Payment.objects.filter(claim_id=claim_id).order_by("-created_at").first()


@dataclass(frozen=True)
class ConfirmedTicket:
    code: str
    seat: int
    seat_label: str
    holder_email: str
    emailed: bool


@dataclass(frozen=True)
class Confirmation:
    """What a claim's confirmation email says: the claim, its event and
    tier, its confirmed payment (if any) and its valid tickets by seat."""

    claim_id: uuid.UUID
    status: str
    quantity: int
    amount: int
    currency: str
    confirmed_at: datetime | None
    event_id: uuid.UUID
    event_name: str
    venue: str
    starts_at: datetime | None
    tier_name: str
    reference: str | None
    paid_at: datetime | None
    tickets: list[ConfirmedTicket]

    @property
    def unsent(self) -> bool:
        """A valid ticket was not emailed yet."""
        return any(not t.emailed for t in self.tickets)


def _columns(model: type[Model], alias: str, *names: str) -> str:
    columns = {f.name: f.column for f in model._meta.concrete_fields}
    return ", ".join(f'{alias}."{columns[name]}"' for name in names)


# Everything the email says in one statement (the worker's only read), one
# row per valid ticket (one row without a ticket when none is left).
_CONFIRMATION_SQL = f"""
SELECT {_columns(Claim, "c", "status", "quantity", "amount", "currency", "confirmed_at")},
       {_columns(Event, "e", "id", "name", "venue", "starts_at")},
       {_columns(TicketTier, "t", "name")},
       p."reference", p."confirmed_at",
       {_columns(IssuedTicket, "k", "code", "seat", "seat_label", "holder_email")},
       k."emailed_at" IS NOT NULL
FROM {Claim._meta.db_table} c
JOIN {Event._meta.db_table} e ON e.id = c."event_id"
JOIN {TicketTier._meta.db_table} t ON t.id = c."tier_id"
LEFT JOIN LATERAL (
    SELECT "reference", "confirmed_at" FROM {Payment._meta.db_table}
    WHERE "claim_id" = c.id AND "status" = %s LIMIT 1
) p ON true
LEFT JOIN {IssuedTicket._meta.db_table} k ON k."claim_id" = c.id AND k."status" = %s
WHERE c.id = %s
ORDER BY k."seat"
"""  # noqa: S608
# Its columns up to the ticket's, in the order of Confirmation's fields (all
# but the first and the last: the claim's id, its tickets).
_READ_FIELDS = [f.name for f in fields(Confirmation)][1:-1]


def confirmation_for_claim(*, claim_id: uuid.UUID | str) -> Confirmation | None:
    """The claim's confirmation as its email says it; None: no such claim."""
    with prepared_cursor() as cursor:
        cursor.execute(
            _CONFIRMATION_SQL,
            [
                PaymentStatus.CONFIRMED.value,
                IssuedTicketStatus.VALID.value,
                uuid.UUID(str(claim_id)),
            ],
        )
        rows = cursor.fetchall()
    if not rows:
        return None
    read = dict(zip(_READ_FIELDS, rows[0], strict=False))
    at = len(_READ_FIELDS)  # where a row's ticket starts (its code: None without one)
    tickets = [ConfirmedTicket(*row[at:]) for row in rows if row[at] is not None]
    return Confirmation(claim_id=uuid.UUID(str(claim_id)), tickets=tickets, **read)


def issued_tickets_for_customer(
    *, customer_id: uuid.UUID | str, event_id: uuid.UUID | str | None = None
) -> QuerySet[IssuedTicket]:
    tickets = IssuedTicket.objects.filter(customer_id=customer_id).select_related(
        "event", "tier", "claim"
    )
    if event_id is not None:
        tickets = tickets.filter(event_id=event_id)
    return tickets.order_by("-issued_at", "seat")


def issued_ticket_by_code(*, code: str) -> IssuedTicket | None:
    normalized = ticket_code_normalize(code)
    if normalized is None:
        return None
    return (
        IssuedTicket.objects.select_related("event", "tier", "claim")
        .filter(code=normalized)
        .first()
    )
