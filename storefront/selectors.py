"""Reads the customer pages and the catalogue API share."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet
from django.utils import timezone

from claims.domain import HOLDING_STATUSES, ClaimStatus, ticket_code_normalize
from claims.models import Claim, IssuedTicket
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


def payment_confirmed_for_claim(*, claim_id: uuid.UUID | str) -> Payment | None:
    return Payment.objects.filter(claim_id=claim_id, status=PaymentStatus.CONFIRMED).first()


def issued_tickets_for_customer(
    *, customer_id: uuid.UUID | str, event_id: uuid.UUID | str | None = None
) -> QuerySet[IssuedTicket]:
    tickets = IssuedTicket.objects.filter(customer_id=customer_id).select_related("event", "tier")
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

