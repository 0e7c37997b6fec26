"""A holder returns a ticket for resale at face value, or takes the return
back. The ticket stays theirs (``ON_RESALE``) until a buyer has paid for it
(``resold``); its ticket row goes back on sale at once, so while the sale
runs the queue admits the next customer for it like for any freed ticket,
and after sell-out the waiting list gets it (``tickets_freed``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from claims.domain import (
    RETURNS_CLOSED,
    ClaimSource,
    ClaimStatus,
    IssuedTicketStatus,
    ReturnStatus,
    TransferStatus,
    return_refund_amount,
    ticket_code_normalize,
)
from claims.models import Claim, IssuedTicket, TicketReturn, TicketTransfer
from claims.services.account import purchase_post, ticket_may_move
from claims.services.payments import claim_lock
from claims.services.refusals import mark_sold_out_if_none_left
from claims.services.release import tickets_returned_on_commit
from claims.services.ticket_log import ticket_log
from fairqueue.errors import Conflict, ErrorCode, NotFound
from fairqueue.locks import pg_lock_timeout
from inventory.models import Ticket
from inventory.seating.domain import SeatChange, SeatStatus
from inventory.seating.seatmap import seats_changed_on_commit
from inventory.services import Freed, inventory_sync_event
from ledger.domain import EntryKind, Move

T = IssuedTicketStatus
R = ReturnStatus


@dataclass(frozen=True)
class ReturnQuote:
    """What a return would give back, shown before the holder confirms."""

    face_value: int
    fee: int
    refund_amount: int
    currency: str
    returns_until: datetime | None


def holder_ticket(*, code: str, customer_id: uuid.UUID | str) -> IssuedTicket:
    """The customer's own ticket by its code; anyone else's is unknown."""
    normalized = ticket_code_normalize(code)
    ticket = (
        IssuedTicket.objects.select_related("event", "tier", "claim")
        .filter(code=normalized, customer_id=customer_id)
        .first()
        if normalized
        else None
    )
    if ticket is None:
        raise NotFound("No ticket of yours has this code.", code=ErrorCode.TICKET_NOT_FOUND)
    return ticket


def ticket_return_quote(*, ticket: IssuedTicket) -> ReturnQuote:
    """Refused (409) when this ticket cannot be returned now."""
    claim, event = ticket.claim, ticket.event
    if claim.source != ClaimSource.SALE:
        raise Conflict(
            "A ticket you were sent cannot be returned for a refund; send it on instead.",
            code=ErrorCode.TICKET_NOT_RETURNABLE,
        )
    if event.returns_until is None or event.returns_until <= timezone.now():
        raise Conflict(
            "Returns are closed for this event.",
            code=ErrorCode.RETURNS_CLOSED,
            details={
                "returns_until": event.returns_until.isoformat() if event.returns_until else None
            },
        )
    face = claim.amount // max(claim.quantity, 1)
    return ReturnQuote(
        face_value=face,
        fee=min(event.return_fee, face),
        refund_amount=return_refund_amount(
            paid=claim.amount, quantity=claim.quantity, fee=event.return_fee
        ),
        currency=claim.currency,
        returns_until=event.returns_until,
    )


def ticket_return(*, code: str, customer_id: uuid.UUID | str) -> TicketReturn:
    """VALID -> ON_RESALE, its ticket row back on sale. Returning a ticket
    already on resale answers its open return. Errors: 404 ticket_not_found;
    409 returns_closed, ticket_not_returnable, transfer_pending,
    ticket_already_used, ticket_void."""
    ticket = holder_ticket(code=code, customer_id=customer_id)
    quote = ticket_return_quote(ticket=ticket)
    with transaction.atomic(), pg_lock_timeout():
        # The claim row: a refund or staff release of the purchase, another
        # return, a withdrawal and a transfer of its tickets wait for it.
        claim = claim_lock(claim_id=ticket.claim_id)
        open_return = TicketReturn.objects.filter(ticket_id=ticket.pk, status=R.ON_RESALE).first()
        if open_return is not None:
            return open_return
        if claim.status != ClaimStatus.CONFIRMED:
            raise _not_live(ticket)
        ticket_may_move(claim, verb="returned")
        if TicketTransfer.objects.filter(
            ticket_id=ticket.pk, status=TransferStatus.PENDING
        ).exists():
            raise Conflict(
                "This ticket is being sent to someone: cancel the transfer first.",
                code=ErrorCode.TRANSFER_PENDING,
            )
        # The door's check-in is the same conditional move from VALID: of a
        # scan and a return at the same moment, exactly one wins.
        if not IssuedTicket.objects.filter(pk=ticket.pk, status=T.VALID).update(status=T.ON_RESALE):
            ticket.refresh_from_db()
            raise _not_live(ticket)
        row = _row_of(claim, ticket)
        Ticket.objects.filter(pk=row.pk, claim_id=claim.pk).update(claim=None, resale_from=claim)
        ret = TicketReturn.objects.create(
            ticket=ticket,
            claim=claim,
            event_id=ticket.event_id,
            ticket_row=row,
            fee=quote.fee,
            refund_amount=quote.refund_amount,
            currency=quote.currency,
        )
        purchase_post(claim, [Move(EntryKind.TICKET_RETURNED)], actor="holder", ref=str(ret.pk))
        ticket_log(
            ticket_id=ticket.pk,
            kind="returned",
            actor="holder",
            data={"return_id": str(ret.pk), "refund_amount": quote.refund_amount, "fee": quote.fee},
        )
        tickets_returned_on_commit(
            event_id=ticket.event_id,
            returned={row.tier_id: Freed(quantity=1, seats=(row.label,) if row.label else ())},
        )
    return ret


def _row_of(claim: Claim, ticket: IssuedTicket) -> Ticket:
    """The ticket row that stands for an issued ticket: its seat on a
    reserved tier, any of the purchase's rows on general admission."""
    rows = Ticket.objects.filter(claim_id=claim.pk)
    if ticket.seat_label:
        rows = rows.filter(label=ticket.seat_label)
    row = rows.order_by("pk").first()
    if row is None:  # a purchase always holds its tickets' rows (invariant 1)
        raise Conflict("This ticket cannot be returned now.", code=ErrorCode.TICKET_NOT_RETURNABLE)
    return row


def _not_live(ticket: IssuedTicket) -> Conflict:
    if ticket.status == T.USED:
        return Conflict("This ticket was used at the door.", code=ErrorCode.TICKET_ALREADY_USED)
    return Conflict("This ticket is void.", code=ErrorCode.TICKET_VOID)


def ticket_return_withdraw(*, code: str, customer_id: uuid.UUID | str) -> None:
    """ON_RESALE -> VALID while nobody is buying its ticket row. Errors: 404
    ticket_not_found / return_not_found; 409 return_taken (a buyer holds it
    or paid for it)."""
    ticket = holder_ticket(code=code, customer_id=customer_id)
    with transaction.atomic(), pg_lock_timeout():
        claim = claim_lock(claim_id=ticket.claim_id)
        ret = TicketReturn.objects.filter(ticket_id=ticket.pk, status=R.ON_RESALE).first()
        if ret is None:
            raise NotFound("This ticket is not on resale.", code=ErrorCode.RETURN_NOT_FOUND)
        if not return_take_back(ret, claim, actor="holder"):
            raise Conflict(
                "Someone is buying this ticket right now; it can no longer be withdrawn.",
                code=ErrorCode.RETURN_TAKEN,
            )


def return_take_back(ret: TicketReturn, claim: Claim, *, actor: str, closed: bool = False) -> bool:
    """The return ends WITHDRAWN and its ticket is VALID again, its row back
    with its purchase; False when a buyer holds the row (their claim is in
    flight: it resells it when paid, or frees it again). Runs under the
    purchase's claim row lock. The row's move is conditional on the same row
    a claim takes with SKIP LOCKED: of a claim and a take-back, exactly one
    gets it. ``closed``: returns closed while it was on resale (the system's
    step, ``returns_closed``), not its holder's."""
    taken_back = Ticket.objects.filter(
        pk=ret.ticket_row_id, claim__isnull=True, resale_from_id=claim.pk
    ).update(claim=claim, resale_from=None)
    if not taken_back:
        return False
    now = timezone.now()
    TicketReturn.objects.filter(pk=ret.pk).update(
        status=R.WITHDRAWN, ended_at=now, end_reason=RETURNS_CLOSED if closed else ""
    )
    IssuedTicket.objects.filter(pk=ret.ticket_id, status=T.ON_RESALE).update(status=T.VALID)
    purchase_post(claim, [Move(EntryKind.TICKET_WITHDRAWN)], actor=actor, ref=str(ret.pk))
    ticket_log(
        ticket_id=ret.ticket_id,
        kind="return_closed" if closed else "return_withdrawn",
        actor=actor,
        data={"return_id": str(ret.pk)},
    )
    row = Ticket.objects.only("tier_id", "label").get(pk=ret.ticket_row_id)
    if row.label:
        seats_changed_on_commit(
            event_id=ret.event_id,
            tier_id=row.tier_id,
            changes=[SeatChange(row.label, SeatStatus.SOLD)],
        )
    event_id, tier_id = ret.event_id, row.tier_id
    transaction.on_commit(lambda: _inventory_after_withdraw(event_id, tier_id), robust=True)
    return True


def _inventory_after_withdraw(event_id: uuid.UUID, tier_id: uuid.UUID) -> None:
    """The row left the free tickets without a Redis reservation: the
    counter is brought down to truth now (the reconciliation heals it when
    Redis is unreachable), and an event with nothing left is SOLD_OUT."""
    inventory_sync_event(event_id=event_id, tier_ids=[tier_id])
    mark_sold_out_if_none_left(event_id=event_id)
