"""A holder sends a ticket to another person by email; the recipient
accepts signed in with that address. The old code voids and a new ticket
(same seat) is issued to them, under a purchase of their own (``source``
transfer, nothing paid), so one purchase per customer per event holds for
transfers too. No money changes hands.

Creating, cancelling and accepting a transfer each take the purchase's
claim row first (the sender's, ``claim_lock``), as a return, a withdrawal
and a refund of it do, and re-check the ticket under it; every move of a
transfer is a conditional UPDATE from PENDING. So of a cancel and an
acceptance exactly one wins, and no transfer is made while a return is.

An offer emails a stranger from FairQueue's address, so it is limited like
a sign-in code (per ticket, per sender, per recipient mailbox) and only
goes to an address sign-in would take."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from claims.domain import (
    ClaimSource,
    ClaimStatus,
    IssuedTicketStatus,
    ReturnStatus,
    TransferStatus,
    VoidReason,
    transfers_left,
)
from claims.models import Claim, IssuedTicket, TicketReturn, TicketTransfer
from claims.selectors import already_claimed
from claims.services.account import purchase_post, ticket_may_move
from claims.services.issuing import issued_tickets_issue
from claims.services.payments import claim_lock
from claims.services.resale import holder_ticket
from claims.services.resold import claim_ticket_moved
from claims.services.ticket_log import ticket_log
from claims.services.tickets import is_one_purchase_violation
from claims.signals import ticket_transfer_offered
from customers.emails import email_canonical, email_normalize, mailbox_validator
from customers.models import Customer
from customers.throttling import rate_limit_hit, rates_parse
from fairqueue.errors import Conflict, ErrorCode, InvalidInput, NotFound
from fairqueue.locks import pg_lock_timeout
from fairqueue.news import send_on_commit
from inventory.models import Ticket
from ledger.domain import EntryKind, Move, sent_moves

T = IssuedTicketStatus
S = TransferStatus


def ticket_transfer_create(
    *, code: str, customer_id: uuid.UUID | str, email: str
) -> TicketTransfer:
    """A PENDING transfer of the customer's VALID ticket to ``email``.
    Errors: 404 ticket_not_found; 409 transfers_not_allowed (off for the
    event, or the ticket's limit reached), transfer_pending, ticket_on_resale,
    ticket_already_used, ticket_void; 422 validation_error (an address
    sign-in refuses, or their own); 429 rate_limited (Retry-After) past the
    limits per ticket, per sender or per recipient mailbox.

    The recipient is emailed once per ticket and mailbox within
    TRANSFER_EMAIL_REPEAT_SECONDS: a transfer cancelled and made again to
    the same mailbox is a transfer like any other, without a second email."""
    address = _recipient(email)
    canonical = email_canonical(address)
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
    if canonical == email_canonical(ticket.holder_email):
        raise InvalidInput("That is your own address.", details={"email": email})
    # Early answers, so that a refused request counts against no limit; the
    # answers that count are given again under the purchase's lock.
    _must_be_valid(ticket)
    if TicketTransfer.objects.filter(ticket_id=ticket.pk, status=S.PENDING).exists():
        raise _already_pending()
    emailed_at = _offer_emailed_at(ticket_id=ticket.pk, canonical=canonical)
    _limits_count(
        sender_id=customer_id, ticket_id=ticket.pk, canonical=canonical, emails=emailed_at is None
    )
    with transaction.atomic(), pg_lock_timeout():
        # The purchase's row (fairqueue/locks.py): a return, a withdrawal, a
        # refund, another transfer of its tickets waits, or went first.
        claim = claim_lock(claim_id=ticket.claim_id)
        _still_sendable(ticket, claim)
        ticket_may_move(claim, verb="sent on")
        try:
            with transaction.atomic():
                transfer = TicketTransfer.objects.create(
                    ticket=ticket,
                    event_id=ticket.event_id,
                    sender_id=customer_id,
                    to_email=address,
                    to_canonical=canonical,
                    emailed_at=emailed_at,
                )
        except IntegrityError as exc:
            raise _already_pending() from exc
        ticket_log(
            ticket_id=ticket.pk,
            kind="transfer_offered",
            actor="holder",
            data={"transfer_id": str(transfer.pk), "to_email": address},
        )
        if emailed_at is None:
            send_on_commit(ticket_transfer_offered, sender=TicketTransfer, transfer_id=transfer.pk)
    return transfer


def _recipient(email: str) -> str:
    """The address as sign-in takes it (customers/emails.py): one spelling
    per mailbox, mailed in ASCII; 422 for any other."""
    try:
        mailbox_validator(email.strip())
    except ValidationError as exc:
        raise InvalidInput(
            "Enter an address of the form name@example.com.", details={"email": email}
        ) from exc
    return email_normalize(email)


def _offer_emailed_at(*, ticket_id: uuid.UUID, canonical: str) -> datetime | None:
    """When this mailbox was last emailed an offer of this ticket, within
    TRANSFER_EMAIL_REPEAT_SECONDS; None when the new offer is to be mailed."""
    since = timezone.now() - timedelta(seconds=settings.TRANSFER_EMAIL_REPEAT_SECONDS)
    return (
        TicketTransfer.objects.filter(
            ticket_id=ticket_id, to_canonical=canonical, emailed_at__gte=since
        )
        .order_by("-emailed_at")
        .values_list("emailed_at", flat=True)
        .first()
    )


def _limits_count(
    *, sender_id: uuid.UUID | str, ticket_id: uuid.UUID, canonical: str, emails: bool
) -> None:
    """Count one transfer against the sign-in's kind of limit (fixed windows
    in Redis, customers/throttling.py): 429 + Retry-After when over, 503
    when Redis cannot count. The sender's own limits first, so a refusal
    spends nothing of the recipient's; the mailbox counts only offers that
    are mailed to it."""
    rate_limit_hit(
        scope="transfer_sender",
        ident=str(sender_id),
        rates=rates_parse(settings.TRANSFER_SENDER_LIMITS),
    )
    rate_limit_hit(
        scope="transfer_ticket",
        ident=str(ticket_id),
        rates=rates_parse(settings.TRANSFER_TICKET_LIMITS),
    )
    if emails:
        rate_limit_hit(
            scope="transfer_mailbox",
            ident=canonical,
            rates=rates_parse(settings.TRANSFER_MAILBOX_LIMITS),
        )


def _already_pending() -> Conflict:
    return Conflict(
        "This ticket is already being sent to someone.", code=ErrorCode.TRANSFER_PENDING
    )


def _still_sendable(ticket: IssuedTicket, claim: Claim) -> None:
    """Under the purchase's lock: the ticket is still VALID with no return
    open, and its purchase CONFIRMED (``claim`` is the locked row)."""
    open_return = TicketReturn.objects.filter(
        ticket_id=OuterRef("pk"), status=ReturnStatus.ON_RESALE
    )
    status, on_resale = (
        IssuedTicket.objects.filter(pk=ticket.pk)
        .annotate(on_resale=Exists(open_return))
        .values_list("status", "on_resale")
        .get()
    )
    ticket.status = T.ON_RESALE if on_resale else status
    ticket.claim = claim
    _must_be_valid(ticket)


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


def _transfer_end(transfer_id: uuid.UUID, *, status: TransferStatus, at: datetime) -> bool:
    """PENDING -> ``status``, conditionally: False when it had already left
    PENDING (accepted, cancelled by its sender or with its purchase)."""
    return bool(
        TicketTransfer.objects.filter(pk=transfer_id, status=S.PENDING).update(
            status=status, ended_at=at
        )
    )


def _not_pending() -> Conflict:
    return Conflict("This transfer is no longer pending.", code=ErrorCode.TRANSFER_NOT_PENDING)


def ticket_transfer_accept(
    *, transfer_id: uuid.UUID | str, customer_id: uuid.UUID | str
) -> IssuedTicket:
    """The recipient (signed in with the address it was sent to) takes the
    ticket: the old code voids, a new one is theirs, same seat. Errors: 404
    transfer_not_found (not theirs either); 409 transfer_not_pending,
    already_claimed (they hold tickets for the event: one purchase per
    customer), ticket_on_resale / ticket_already_used / ticket_void (the
    ticket changed since it was sent). One transaction: whatever refuses it
    after the transfer's move rolls the move back too."""
    recipient = Customer.objects.get(pk=customer_id)
    transfer = _pending_for(transfer_id, recipient=recipient)
    old = transfer.ticket
    with transaction.atomic(), pg_lock_timeout():
        # The sender's purchase first (fairqueue/locks.py): a cancel of this
        # transfer, a return, a withdrawal or a refund of it waits.
        claim = claim_lock(claim_id=old.claim_id)
        now = timezone.now()
        if not _transfer_end(transfer.pk, status=S.ACCEPTED, at=now):
            raise _not_pending()
        # The purchase's account says whether its ticket may still leave it
        # (a dispute, a refund since it was sent).
        balance = ticket_may_move(claim, verb="sent on")
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
        # Both accounts: the money that backed the ticket stays with the
        # sender's purchase, kept for it; the recipient's holds the ticket.
        purchase_post(claim, sent_moves(balance), actor="recipient", ref=str(transfer.pk))
        purchase_post(
            new_claim,
            [Move(EntryKind.TICKET_RECEIVED, tickets=1)],
            actor="recipient",
            ref=str(transfer.pk),
        )
        (new,) = issued_tickets_issue(claim_id=new_claim.pk)
        IssuedTicket.objects.filter(pk=new.pk).update(
            replaces_id=old.pk, transfers=old.transfers + 1
        )
        TicketTransfer.objects.filter(pk=transfer.pk).update(new_ticket=new)
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
    transfer_not_found; 409 transfer_not_pending (accepted first: the
    ticket is the recipient's, never "cancelled" as well)."""
    transfer = _pending_for(transfer_id, sender_id=customer_id)
    with transaction.atomic(), pg_lock_timeout():
        # The purchase's row, as the acceptance takes it: of the two, the
        # one that gets it first wins, and the other finds it not pending.
        claim_lock(claim_id=transfer.ticket.claim_id)
        if not _transfer_end(transfer.pk, status=S.CANCELLED, at=timezone.now()):
            raise _not_pending()
        ticket_log(
            ticket_id=transfer.ticket_id,
            kind="transfer_cancelled",
            actor="holder",
            data={"transfer_id": str(transfer.pk)},
        )
