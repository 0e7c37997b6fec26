"""Writes of the storefront: its emails and their delivery records. Every
email whose news may be lost with a task (the confirmation, a return's end,
a transfer, a waiting-list offer) is marked ``emailed_at`` once sent; what is
still unmarked SWEEP_AFTER after its news is enqueued again by the sweep
(``storefront.tasks.emails_sweep``): at least once, never zero times."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.core.mail import EmailMessage
from django.db.models import Min, Q, QuerySet
from django.utils import timezone

from claims.domain import (
    RETURNS_CLOSED,
    ClaimStatus,
    IssuedTicketStatus,
    ReturnStatus,
    TransferStatus,
)
from claims.models import Claim, IssuedTicket, TicketReturn, TicketTransfer
from fairqueue.db import prepared_cursor
from queueing.domain import QueueStatus, WaitlistStatus
from queueing.models import WaitlistEntry
from storefront.emails import (
    cancellation_email,
    confirmation_email,
    offer_email,
    resold_email,
    return_closed_email,
    transfer_email,
)
from storefront.selectors import confirmation_for_claim

logger = logging.getLogger(__name__)

# An email not sent this long after its news is sent by the sweep (its
# enqueue was lost: broker down at that moment, a crash): well inside a
# waiting-list offer's window (five minutes unless the organizer says).
SWEEP_AFTER = timedelta(minutes=1)


def confirmation_email_deliver(*, claim_id: uuid.UUID | str) -> str:
    """Send the confirmation of a CONFIRMED claim whose valid tickets were not
    emailed yet, then mark them emailed. At least once: a crash between the
    send and the mark sends it again on the next try, never zero times. A
    send failure raises (the task retries). Two statements: the email's one
    read (``confirmation_for_claim``) and the mark."""
    confirmation = confirmation_for_claim(claim_id=claim_id)
    if confirmation is None or confirmation.status != ClaimStatus.CONFIRMED:
        return "not_confirmed"
    if not confirmation.unsent:
        return "already_sent"
    message = confirmation_email(confirmation)
    if message is None:
        return "nothing_to_send"
    message.send(fail_silently=False)
    with prepared_cursor() as cursor:
        cursor.execute(
            _MARK_EMAILED_SQL,
            [timezone.now(), confirmation.claim_id, IssuedTicketStatus.VALID.value],
        )
    logger.info("confirmation email sent claim=%s", confirmation.claim_id)
    return "sent"


_MARK_EMAILED_SQL = (
    f"UPDATE {IssuedTicket._meta.db_table} SET emailed_at = %s "  # noqa: S608
    "WHERE claim_id = %s AND status = %s AND emailed_at IS NULL"
)


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


def _send_then_mark(message: EmailMessage, rows: QuerySet[Any]) -> str:
    """Send, then mark ``rows`` emailed. At least once: a crash between the
    two sends it again on the next try (the sweep's), never zero times. A
    send failure raises (the task retries)."""
    message.send(fail_silently=False)
    rows.filter(emailed_at__isnull=True).update(emailed_at=timezone.now())
    return "sent"


def return_email_deliver(*, return_id: uuid.UUID | str) -> str:
    """Tell the holder how their return ended: resold (its code void, what
    is refunded), or back to them when returns closed (valid again)."""
    rows = TicketReturn.objects.filter(pk=return_id, emailed_at__isnull=True)
    ret = rows.select_related("ticket__event").first()
    if ret is None:
        return "already_sent"
    if ret.status == ReturnStatus.RESOLD:
        return _send_then_mark(resold_email(ticket_return=ret), rows)
    if ret.status == ReturnStatus.WITHDRAWN and ret.end_reason == RETURNS_CLOSED:
        return _send_then_mark(return_closed_email(ticket_return=ret), rows)
    return "nothing_to_send"


def transfer_email_deliver(*, transfer_id: uuid.UUID | str) -> str:
    """Tell the recipient of a pending transfer how to accept it."""
    rows = TicketTransfer.objects.filter(
        pk=transfer_id, status=TransferStatus.PENDING, emailed_at__isnull=True
    )
    transfer = rows.select_related("ticket__event", "ticket__tier").first()
    if transfer is None:
        return "nothing_to_send"
    return _send_then_mark(transfer_email(transfer=transfer), rows)


def offer_email_deliver(*, entry_id: uuid.UUID | str) -> str:
    """Email a waiting-list offer still open (the page and the socket
    announce it too)."""
    rows = WaitlistEntry.objects.filter(
        pk=entry_id, status=WaitlistStatus.OFFERED, emailed_at__isnull=True
    )
    entry = rows.select_related("customer", "event", "queue_entry").first()
    admission = entry.queue_entry if entry is not None else None
    if entry is None or admission is None:
        return "nothing_to_send"
    until = admission.admission_expires_at
    if admission.status != QueueStatus.ADMITTED or until is None or until <= timezone.now():
        return "lapsed"
    message = offer_email(
        event_name=entry.event.name,
        event_id=entry.event_id,
        to=entry.customer.email,
        expires_at=until.isoformat(),
    )
    return _send_then_mark(message, rows)


def _due(rows: QuerySet[Any], *, since: str, now: datetime | None, limit: int) -> list[uuid.UUID]:
    """The rows whose email is due since over SWEEP_AFTER ago and not sent."""
    cutoff = (now or timezone.now()) - SWEEP_AFTER
    return list(
        rows.filter(emailed_at__isnull=True, **{f"{since}__lte": cutoff})
        .order_by(since)
        .values_list("pk", flat=True)[:limit]
    )


def return_emails_unsent(*, now: datetime | None = None, limit: int = 500) -> list[uuid.UUID]:
    """Returns resold, or closed back to their holder, not emailed."""
    ended = Q(status=ReturnStatus.RESOLD) | Q(
        status=ReturnStatus.WITHDRAWN, end_reason=RETURNS_CLOSED
    )
    return _due(TicketReturn.objects.filter(ended), since="ended_at", now=now, limit=limit)


def transfer_emails_unsent(*, now: datetime | None = None, limit: int = 500) -> list[uuid.UUID]:
    """Pending transfers whose recipient was not emailed."""
    pending = TicketTransfer.objects.filter(status=TransferStatus.PENDING)
    return _due(pending, since="created_at", now=now, limit=limit)


def offer_emails_unsent(*, now: datetime | None = None, limit: int = 500) -> list[uuid.UUID]:
    """Waiting-list offers still open that were not emailed."""
    open_offers = WaitlistEntry.objects.filter(
        status=WaitlistStatus.OFFERED,
        queue_entry__status=QueueStatus.ADMITTED,
        queue_entry__admission_expires_at__gt=now or timezone.now(),
    )
    return _due(open_offers, since="offered_at", now=now, limit=limit)


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
