"""Writes of the storefront: the confirmation email's delivery record, the
cancellation email, and the notes of a resold ticket and of a ticket sent to
someone."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from django.db.models import Min
from django.utils import timezone

from claims.domain import ClaimStatus, IssuedTicketStatus
from claims.models import Claim, IssuedTicket, TicketReturn, TicketTransfer
from customers.models import Customer
from events.models import Event
from storefront.emails import (
    cancellation_email,
    confirmation_email,
    offer_email,
    resold_email,
    transfer_email,
)

logger = logging.getLogger(__name__)

# A confirmation not sent this long after its tickets were issued is sent by
# the sweep (its enqueue was lost: broker down at that moment, a crash).
SWEEP_AFTER = timedelta(minutes=2)


def confirmation_email_deliver(*, claim_id: uuid.UUID | str) -> str:
    """Send the confirmation of a CONFIRMED claim whose valid tickets were not
    emailed yet, then mark them emailed. At least once: a crash between the
    send and the mark sends it again on the next try, never zero times. A
    send failure raises (the task retries)."""
    claim = Claim.objects.select_related("event", "tier").filter(pk=claim_id).first()
    if claim is None or claim.status != ClaimStatus.CONFIRMED:
        return "not_confirmed"
    pending = IssuedTicket.objects.filter(
        claim_id=claim.pk, status=IssuedTicketStatus.VALID, emailed_at__isnull=True
    )
    if not pending.exists():
        return "already_sent"
    message = confirmation_email(claim=claim)
    if message is None:
        return "nothing_to_send"
    message.send(fail_silently=False)
    pending.update(emailed_at=timezone.now())
    logger.info("confirmation email sent claim=%s", claim.pk)
    return "sent"


def confirmations_unsent(*, now: datetime | None = None, limit: int = 500) -> list[uuid.UUID]:
    """Claims with valid tickets issued over SWEEP_AFTER ago and not emailed."""
    cutoff = (now or timezone.now()) - SWEEP_AFTER
    rows = (
        IssuedTicket.objects.filter(
            status=IssuedTicketStatus.VALID,
            emailed_at__isnull=True,
            claim__status=ClaimStatus.CONFIRMED,
        )
        .values("claim_id")
        .annotate(first=Min("issued_at"))
        .filter(first__lte=cutoff)
        .order_by("first")
        .values_list("claim_id", flat=True)[:limit]
    )
    return list(rows)


def resold_email_deliver(*, return_id: uuid.UUID | str) -> str:
    """Tell the first buyer of a resold ticket that it was resold and what
    is refunded. A send failure raises (the task retries)."""
    ret = TicketReturn.objects.select_related("ticket__event").filter(pk=return_id).first()
    if ret is None:
        return "not_found"
    resold_email(ticket_return=ret).send(fail_silently=False)
    return "sent"


def transfer_email_deliver(*, transfer_id: uuid.UUID | str) -> str:
    """Tell the recipient of a ticket how to accept it."""
    transfer = (
        TicketTransfer.objects.select_related("ticket__event").filter(pk=transfer_id).first()
    )
    if transfer is None:
        return "not_found"
    transfer_email(transfer=transfer).send(fail_silently=False)
    return "sent"


def offer_email_deliver(
    *, event_id: uuid.UUID | str, customer_id: uuid.UUID | str, expires_at: str
) -> str:
    """Email a waiting-list offer (the page and the socket announce it too).
    An offer that is no longer open by now is not mailed."""
    customer = Customer.objects.filter(pk=customer_id).first()
    event = Event.objects.filter(pk=event_id).first()
    if customer is None or event is None:
        return "gone"
    if datetime.fromisoformat(expires_at) <= timezone.now():
        return "lapsed"
    offer_email(
        event_name=event.name, event_id=event.pk, to=customer.email, expires_at=expires_at
    ).send(fail_silently=False)
    return "sent"


def cancellation_email_deliver(*, claim_id: uuid.UUID | str, reason: str) -> str:
    """Tell the buyer their paid purchase was cancelled. Sent once per
    cancellation (the news of it comes once: a claim leaves CONFIRMED once);
    a send failure raises (the task retries)."""
    claim = Claim.objects.select_related("event", "tier").filter(pk=claim_id).first()
    if claim is None or claim.status != ClaimStatus.RELEASED:
        return "not_cancelled"
    message = cancellation_email(claim=claim, reason=reason)
    if message is None:
        return "nothing_to_send"
    message.send(fail_silently=False)
    logger.info("cancellation email sent claim=%s", claim.pk)
    return "sent"
