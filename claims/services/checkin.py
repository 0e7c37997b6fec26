"""The door: an organizer's scanner checks an issued ticket's code in."""

from __future__ import annotations

import uuid

from django.utils import timezone

from claims.domain import ClaimStatus, IssuedTicketStatus, ticket_code_normalize
from claims.models import IssuedTicket
from fairqueue.errors import Conflict, ErrorCode, NotFound

T = IssuedTicketStatus


def issued_ticket_check_in(
    *, event_id: uuid.UUID | str, code: str, actor: str, guard: bool = True
) -> IssuedTicket:
    """VALID -> USED for a ticket of this event, in one conditional UPDATE:
    of two scanners reading one code at the same moment, exactly one admits
    it. Errors: ``ticket_not_found`` (404), ``ticket_other_event``,
    ``ticket_already_used`` (details.checked_in_at), ``ticket_void``
    (details.voided_at, details.reason) and ``ticket_on_resale`` (returned
    for resale: never valid at the door while a buyer may take it), all 409.

    ``guard=False`` reads and then writes, unconditionally: only the test
    that shows the race this function closes uses it."""
    normalized = ticket_code_normalize(code)
    ticket = (
        IssuedTicket.objects.select_related("event", "tier", "claim")
        .filter(code=normalized)
        .first()
        if normalized
        else None
    )
    if ticket is None:
        raise NotFound("No ticket has this code.", code=ErrorCode.TICKET_NOT_FOUND)
    if str(ticket.event_id) != str(event_id):
        # Nothing about that event: it may be another organizer's sale.
        raise Conflict("This ticket is for another event.", code=ErrorCode.TICKET_OTHER_EVENT)
    now = timezone.now()
    live = IssuedTicket.objects.filter(pk=ticket.pk)
    if ticket.claim.status != ClaimStatus.CONFIRMED:
        # A paid claim that left CONFIRMED voids its tickets in the same
        # transaction; this holds even for a path that forgot to.
        live = live.none()
    elif guard:
        # On the row itself, not through a join: Django turns a filter on the
        # claim into ``id IN (subquery)``, which Postgres does not re-check
        # after waiting for a concurrent scan's row lock (both would pass).
        live = live.filter(status=T.VALID)
    elif ticket.status != T.VALID:
        live = live.none()
    if live.update(status=T.USED, checked_in_at=now, checked_in_by=actor[:150]):
        ticket.refresh_from_db()
        return ticket
    ticket.refresh_from_db()
    if ticket.status == T.USED:
        raise Conflict(
            "Already used: this ticket was checked in before.",
            code=ErrorCode.TICKET_ALREADY_USED,
            details={
                "checked_in_at": ticket.checked_in_at.isoformat() if ticket.checked_in_at else None,
                "checked_in_by": ticket.checked_in_by,
            },
        )
    if ticket.status == T.ON_RESALE:
        raise Conflict(
            "On resale: its holder returned it. Withdrawing the return makes it valid again.",
            code=ErrorCode.TICKET_ON_RESALE,
        )
    raise Conflict(
        "Void: this ticket was cancelled (refunded, released, resold or transferred).",
        code=ErrorCode.TICKET_VOID,
        details={
            "voided_at": ticket.voided_at.isoformat() if ticket.voided_at else None,
            "reason": ticket.void_reason,
        },
    )
