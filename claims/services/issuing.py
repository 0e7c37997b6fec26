"""Issued tickets: made when a claim becomes CONFIRMED, voided when it
leaves CONFIRMED. Both run inside the transaction that moves the claim, so a
claim and its tickets never disagree."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime

from django.utils import timezone

from claims.domain import ISSUED_TICKET_MACHINE, IssuedTicketStatus, ticket_code_new
from claims.models import Claim, IssuedTicket
from claims.services.resold import resales_complete
from claims.signals import claim_confirmed
from fairqueue.news import send_on_commit

logger = logging.getLogger(__name__)

T = IssuedTicketStatus


def issued_tickets_issue(*, claim_id: uuid.UUID | str) -> list[IssuedTicket]:
    """One VALID ticket per seat of the (CONFIRMED) claim, each with a fresh
    code; seats already issued are skipped, so a repeated confirmation issues
    nothing twice. Ticket rows of the claim that were on resale are sold
    (``resales_complete``). After commit, ``claim_confirmed`` tells the apps
    above (the storefront sends the confirmation email)."""
    claim = Claim.objects.select_related("customer").get(pk=claim_id)
    now = timezone.now()
    # A code that collides (80 random bits: never in practice) is skipped by
    # the INSERT like an issued seat; the next round gives its seat another.
    for _ in range(3):
        missing = _seats_missing(claim)
        if not missing:
            break
        _insert(claim, missing, now)
    send_on_commit(claim_confirmed, sender=Claim, claim_id=claim.pk)
    issued = list(
        IssuedTicket.objects.filter(claim_id=claim.pk).exclude(status=T.VOID).order_by("seat")
    )
    resales_complete(claim=claim, issued=issued)
    return issued


def _seats_missing(claim: Claim) -> list[int]:
    issued = set(
        IssuedTicket.objects.filter(claim_id=claim.pk)
        .exclude(status=T.VOID)
        .values_list("seat", flat=True)
    )
    return [seat for seat in range(1, claim.quantity + 1) if seat not in issued]


def _insert(claim: Claim, seats: list[int], now: datetime) -> None:
    IssuedTicket.objects.bulk_create(
        [
            IssuedTicket(
                code=ticket_code_new(),
                claim_id=claim.pk,
                event_id=claim.event_id,
                tier_id=claim.tier_id,
                customer_id=claim.customer_id,
                holder_email=claim.customer.email,
                seat=seat,
                seat_label=claim.seats[seat - 1] if len(claim.seats) >= seat else "",
                issued_at=now,
            )
            for seat in seats
        ],
        # The one-per-seat index: a seat issued meanwhile stays as it is.
        ignore_conflicts=True,
    )


def issued_tickets_void(*, claim_ids: list[uuid.UUID], reason: str) -> int:
    """Every live ticket of these claims becomes VOID (conditional). Returns
    how many were voided."""
    voided = IssuedTicket.objects.filter(
        claim_id__in=claim_ids, status__in=ISSUED_TICKET_MACHINE.sources_of(T.VOID)
    ).update(status=T.VOID, voided_at=timezone.now(), void_reason=reason[:32])
    if voided:
        logger.info("voided %s issued tickets of claims %s (%s)", voided, claim_ids, reason)
    return voided
