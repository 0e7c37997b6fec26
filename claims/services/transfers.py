"""A holder sends a ticket to another person by email; the recipient
accepts signed in with that address. The old code voids and a new ticket
(same seat) is issued to them, under a purchase of their own (``source``
transfer, nothing paid), so one purchase per customer per event holds for
transfers too. No money changes hands."""

from __future__ import annotations

import uuid

from django.db import IntegrityError, transaction
from django.utils import timezone

from claims.domain import (
    ClaimSource,
    ClaimStatus,
    IssuedTicketStatus,
    TransferStatus,
    VoidReason,
    transfers_left,
)
from claims.models import Claim, IssuedTicket, TicketTransfer
from claims.selectors import already_claimed
from claims.services.issuing import issued_tickets_issue
from claims.services.payments import claim_lock
from claims.services.resale import holder_ticket
from claims.services.resold import claim_ticket_moved
from claims.services.ticket_log import ticket_log
from claims.services.tickets import is_one_purchase_violation
from claims.signals import ticket_transfer_offered
from customers.emails import email_canonical
from customers.models import Customer
from fairqueue.errors import Conflict, ErrorCode, InvalidInput, NotFound
from fairqueue.locks import pg_lock_timeout
from fairqueue.news import send_on_commit
from inventory.models import Ticket

T = IssuedTicketStatus
S = TransferStatus


def ticket_transfer_create(
    *, code: str, customer_id: uuid.UUID | str, email: str
) -> TicketTransfer:
    """A PENDING transfer of the customer's VALID ticket to ``email``.
    Errors: 404 ticket_not_found; 409 transfers_not_allowed (off for the
    event, or the ticket's limit reached), transfer_pending, ticket_on_resale,
    ticket_already_used, ticket_void; 422 validation_error (their own address)."""
    ticket = holder_ticket(code=code, customer_id=customer_id)
    event = ticket.event
    if not transfers_left(
        allowed=event.transfers_allowed, limit=event.transfer_limit, done=ticket.transfers
    ):
        raise Conflict(
            "This ticket cannot be transferred."
            if event.transfers_allowed
            else "The organizer does not allow transfers for this event.",
            code=ErrorCode.TRANSFERS_NOT_ALLOWED,
            details={"limit": event.transfer_limit, "transfers": ticket.transfers},
        )
    if email_canonical(email) == email_canonical(ticket.holder_email):
        raise InvalidInput("That is your own address.", details={"email": email})
    _must_be_valid(ticket)
    try:
        with transaction.atomic():
            transfer = TicketTransfer.objects.create(
                ticket=ticket,
                event_id=ticket.event_id,
                sender_id=customer_id,
                to_email=email,
                to_canonical=email_canonical(email),
            )
            ticket_log(
                ticket_id=ticket.pk,
                kind="transfer_offered",
                actor="holder",
                data={"transfer_id": str(transfer.pk), "to_email": email},
            )
            send_on_commit(ticket_transfer_offered, sender=TicketTransfer, transfer_id=transfer.pk)
    except IntegrityError as exc:
        raise Conflict(
            "This ticket is already being sent to someone.", code=ErrorCode.TRANSFER_PENDING
        ) from exc
    return transfer


def _must_be_valid(ticket: IssuedTicket) -> None:
    if ticket.status == T.VALID and ticket.claim.status == ClaimStatus.CONFIRMED:
        return
    if ticket.status == T.ON_RESALE:
        raise Conflict(
            "This ticket is on resale: withdraw the return first.",
            code=ErrorCode.TICKET_ON_RESALE,
        )
    if ticket.status == T.USED:
        raise Conflict("This ticket was used at the door.", code=ErrorCode.TICKET_ALREADY_USED)
    raise Conflict("This ticket is void.", code=ErrorCode.TICKET_VOID)


def _pending_for(
    transfer_id: uuid.UUID | str, *, recipient: Customer | None = None, sender_id: object = None
) -> TicketTransfer:
    transfer = TicketTransfer.objects.select_related("ticket").filter(pk=transfer_id).first()
    not_for_recipient = recipient is not None and (
        transfer is None or transfer.to_canonical != email_canonical(recipient.email)
    )
    not_from_sender = sender_id is not None and (
        transfer is None or str(transfer.sender_id) != str(sender_id)
    )
    if transfer is None or not_for_recipient or not_from_sender:
        # Someone else's transfer is as unknown as a missing one.
        raise NotFound("No such transfer.", code=ErrorCode.TRANSFER_NOT_FOUND)
    return transfer


def ticket_transfer_accept(
    *, transfer_id: uuid.UUID | str, customer_id: uuid.UUID | str
) -> IssuedTicket:
    """The recipient (signed in with the address it was sent to) takes the
    ticket: the old code voids, a new one is theirs, same seat. Errors: 404
    transfer_not_found (not theirs either); 409 transfer_not_pending,
    already_claimed (they hold tickets for the event: one purchase per
    customer), ticket_on_resale / ticket_already_used / ticket_void (the
    ticket changed since it was sent)."""
    recipient = Customer.objects.get(pk=customer_id)
    transfer = _pending_for(transfer_id, recipient=recipient)
    old = transfer.ticket
    with transaction.atomic(), pg_lock_timeout():
        # The sender's purchase: a return, a withdrawal or a refund of it waits.
        claim = claim_lock(claim_id=old.claim_id)
        if not TicketTransfer.objects.filter(pk=transfer.pk, status=S.PENDING).exists():
            raise Conflict(
                "This transfer is no longer pending.", code=ErrorCode.TRANSFER_NOT_PENDING
            )
        now = timezone.now()
        # The same conditional move from VALID as a return and the door's scan.
        voided = IssuedTicket.objects.filter(pk=old.pk, status=T.VALID).update(
            status=T.VOID, voided_at=now, void_reason=VoidReason.TRANSFERRED.value
        )
        if not voided or claim.status != ClaimStatus.CONFIRMED:
            old.refresh_from_db()
            old.claim = claim
            _must_be_valid(old)
        rows = Ticket.objects.filter(claim_id=claim.pk)
        if old.seat_label:
            rows = rows.filter(label=old.seat_label)
        row = rows.order_by("pk").first()
        if row is None:
            raise Conflict("This ticket cannot be transferred now.", code=ErrorCode.TICKET_VOID)
        new_claim = Claim(
            event_id=old.event_id,
            tier_id=old.tier_id,
            customer_id=recipient.pk,
            quantity=1,
            seats=[old.seat_label] if old.seat_label else [],
            amount=0,
            currency=claim.currency,
            status=ClaimStatus.CONFIRMED,
            expires_at=now,
            confirmed_at=now,
            source=ClaimSource.TRANSFER,
        )
        try:
            with transaction.atomic():
                new_claim.save(force_insert=True)
        except IntegrityError as exc:
            if not is_one_purchase_violation(exc):
                raise
            raise already_claimed(event_id=old.event_id, customer_id=recipient.pk) from exc
        Ticket.objects.filter(pk=row.pk, claim_id=claim.pk).update(claim=new_claim)
        claim_ticket_moved(claim_id=claim.pk, label=old.seat_label)
        (new,) = issued_tickets_issue(claim_id=new_claim.pk)
        IssuedTicket.objects.filter(pk=new.pk).update(
            replaces_id=old.pk, transfers=old.transfers + 1
        )
        TicketTransfer.objects.filter(pk=transfer.pk).update(
            status=S.ACCEPTED, new_ticket=new, ended_at=now
        )
        ticket_log(
            ticket_id=old.pk,
            kind="transferred",
            actor="recipient",
            data={"transfer_id": str(transfer.pk), "new_ticket_id": str(new.pk)},
        )
        ticket_log(
            ticket_id=new.pk,
            kind="issued_for_transfer",
            actor="recipient",
            data={"transfer_id": str(transfer.pk), "replaces": str(old.pk)},
        )
    new.refresh_from_db()
    return new


def ticket_transfer_cancel(*, transfer_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> None:
    """The sender takes a pending transfer back. Errors: 404
    transfer_not_found; 409 transfer_not_pending."""
    transfer = _pending_for(transfer_id, sender_id=customer_id)
    with transaction.atomic():
        if not TicketTransfer.objects.filter(pk=transfer.pk, status=S.PENDING).update(
            status=S.CANCELLED, ended_at=timezone.now()
        ):
            raise Conflict(
                "This transfer is no longer pending.", code=ErrorCode.TRANSFER_NOT_PENDING
            )
        ticket_log(
            ticket_id=transfer.ticket_id,
            kind="transfer_cancelled",
            actor="holder",
            data={"transfer_id": str(transfer.pk)},
        )
