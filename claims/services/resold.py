"""What a purchase does to the returns whose ticket rows it took: once a
buyer's claim is CONFIRMED (paid), each returned ticket it holds is RESOLD in
the same transaction: the first buyer's code is void, the new ticket carries
the seat, and the first buyer is owed face value minus the fee (the payments
app opens that refund after commit, on ``ticket_resold``). And what a
purchase leaving CONFIRMED does to its own returns: they end, nothing resold.
"""

from __future__ import annotations

import logging
import uuid

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import F, Func, Value
from django.utils import timezone

from claims.domain import (
    ISSUED_TICKET_MACHINE,
    ClaimStatus,
    IssuedTicketStatus,
    ReturnStatus,
    TransferStatus,
    VoidReason,
)
from claims.models import Claim, IssuedTicket, TicketReturn, TicketTransfer
from claims.services.account import purchase_balance, purchase_post
from claims.services.ticket_log import ticket_log
from claims.signals import ticket_resold
from fairqueue.locks import claim_row_lock
from fairqueue.news import send_on_commit
from inventory.models import Ticket
from ledger.domain import resale_moves

logger = logging.getLogger(__name__)

T = IssuedTicketStatus
R = ReturnStatus


def resales_complete(*, claim: Claim, issued: list[IssuedTicket]) -> list[TicketReturn]:
    """``claim`` was just CONFIRMED and ``issued`` are its live tickets: each
    of its ticket rows that was on resale is sold. Runs in the transaction
    that confirms the claim (under its payment's and claim's row locks)."""
    rows = list(Ticket.objects.filter(claim_id=claim.pk, resale_from__isnull=False).order_by("pk"))
    resold: list[TicketReturn] = []
    spare = [t for t in issued if t.replaces_id is None]
    for row in rows:
        ret = TicketReturn.objects.filter(ticket_row_id=row.pk, status=R.ON_RESALE).first()
        seller_id = row.resale_from_id
        assert seller_id is not None  # the rows were picked by it
        # The first buyer's claim row first (claim rows before ticket rows):
        # a withdrawal holding it then finds the row taken and gives up.
        seller = claim_row_lock(Claim.objects.filter(pk=seller_id))
        Ticket.objects.filter(pk=row.pk, resale_from_id=seller_id).update(resale_from=None)
        if ret is None or seller is None or seller.status != ClaimStatus.CONFIRMED:
            logger.warning("ticket row %s was on resale from a purchase no longer held", row.pk)
            continue
        new = _new_ticket_for(row, spare)
        now = timezone.now()
        ended = TicketReturn.objects.filter(pk=ret.pk, status=R.ON_RESALE).update(
            status=R.RESOLD,
            resale_claim_id=claim.pk,
            new_ticket_id=new.pk if new else None,
            resold_at=now,
            ended_at=now,
        )
        if not ended:
            continue
        claim_ticket_moved(claim_id=seller_id, label=row.label or "")
        # The first buyer's account: the ticket left it, and what backed it is
        # owed back (face value minus the fee) and the fee kept.
        purchase_post(
            seller,
            resale_moves(purchase_balance(seller), owed=ret.refund_amount, fee=ret.fee),
            actor="buyer",
            ref=str(ret.pk),
        )
        IssuedTicket.objects.filter(
            pk=ret.ticket_id, status__in=ISSUED_TICKET_MACHINE.sources_of(T.VOID)
        ).update(status=T.VOID, voided_at=now, void_reason=VoidReason.RESOLD.value)
        ticket_log(
            ticket_id=ret.ticket_id,
            kind="resold",
            actor="buyer",
            data={
                "return_id": str(ret.pk),
                "claim_id": str(claim.pk),
                "new_ticket_id": str(new.pk) if new else None,
                "refund_amount": ret.refund_amount,
                "seat_label": row.label or "",
            },
        )
        if new is not None:
            IssuedTicket.objects.filter(pk=new.pk).update(replaces_id=ret.ticket_id)
            ticket_log(
                ticket_id=new.pk,
                kind="issued_for_resale",
                actor="buyer",
                data={"return_id": str(ret.pk), "replaces": str(ret.ticket_id)},
            )
        send_on_commit(ticket_resold, sender=TicketReturn, return_id=ret.pk)
        resold.append(ret)
    return resold


def claim_ticket_moved(*, claim_id: uuid.UUID | str, label: str) -> None:
    """One ticket of the purchase left it for good (resold, transferred):
    ``moved`` counts it, and its seat is no longer one the purchase names."""
    fields: dict[str, object] = {"moved": F("moved") + 1}
    if label:
        fields["seats"] = Func(
            F("seats"),
            Value(label),
            function="array_remove",
            output_field=ArrayField(models.CharField(max_length=48)),
        )
    Claim.objects.filter(pk=claim_id).update(**fields)


def _new_ticket_for(row: Ticket, spare: list[IssuedTicket]) -> IssuedTicket | None:
    """The buyer's ticket that stands for this row: the same seat on a
    reserved tier, any not yet matched on general admission."""
    for ticket in spare:
        if not row.label or ticket.seat_label == row.label:
            spare.remove(ticket)
            return ticket
    return None


def returns_end_for_claim(*, claim_id: uuid.UUID | str, reason: str) -> None:
    """The purchase left CONFIRMED (a refund, staff): its returns still on
    resale end unsold (their rows are plain free tickets from now on, or
    stay with the buyer whose claim holds them), and its pending transfers
    are cancelled. Runs in the releasing transaction."""
    now = timezone.now()
    Ticket.objects.filter(resale_from__pk=claim_id).update(resale_from=None)
    ended = list(
        TicketReturn.objects.filter(claim_id=claim_id, status=R.ON_RESALE).values_list(
            "pk", "ticket_id"
        )
    )
    if ended:
        TicketReturn.objects.filter(pk__in=[pk for pk, _ in ended]).update(
            status=R.CANCELLED, ended_at=now
        )
    for pk, ticket_id in ended:
        ticket_log(
            ticket_id=ticket_id,
            kind="return_cancelled",
            actor="system",
            data={"return_id": str(pk), "reason": reason},
        )
    TicketTransfer.objects.filter(ticket__claim_id=claim_id, status=TransferStatus.PENDING).update(
        status=TransferStatus.CANCELLED, ended_at=now
    )


def ticket_return_refund_opened(*, return_id: uuid.UUID | str, refund_id: uuid.UUID) -> bool:
    """The payments app opened the refund of a RESOLD return (inside its
    transaction, under the payment's row lock). False when it already had
    one: the caller rolls its own back."""
    return _return_refund_moved(
        return_id, named=None, to=refund_id, kind="refund_requested", actor="system"
    )


# ``TicketReturn.end_reason`` of a RESOLD return whose refund is not due: the
# purchase's account owes nothing more for it (the bank paid it back).
NOTHING_OWED = "nothing_owed"


def ticket_return_refund_closed(*, return_id: uuid.UUID | str, reason: str) -> bool:
    """A RESOLD return's refund will never be asked for (``reason``),
    written in its ticket's log; False when it was opened or closed already."""
    ret = TicketReturn.objects.filter(pk=return_id).first()
    if ret is None or not TicketReturn.objects.filter(
        pk=return_id, status=R.RESOLD, refund_id__isnull=True, end_reason=""
    ).update(end_reason=reason):
        return False
    ticket_log(
        ticket_id=ret.ticket_id,
        kind="refund_closed",
        actor="system",
        data={"return_id": str(return_id), "reason": reason, "amount": ret.refund_amount},
    )
    return True


def ticket_return_refund_retry(
    *, return_id: uuid.UUID | str, failed_refund_id: uuid.UUID, actor: str
) -> bool:
    """Staff ask again for a RESOLD return's refund that failed: the return
    no longer names it, so the payments app opens another (the failed one
    stays in the payments' records and in the ticket's log). False when it
    names another refund already."""
    return _return_refund_moved(
        return_id, named=failed_refund_id, to=None, kind="refund_retried", actor=actor
    )


def _return_refund_moved(
    return_id: uuid.UUID | str,
    *,
    named: uuid.UUID | None,
    to: uuid.UUID | None,
    kind: str,
    actor: str,
) -> bool:
    """The RESOLD return names refund ``to`` instead of ``named`` (None: no
    refund), written in its ticket's log; False when it is not RESOLD or
    named another."""
    ret = TicketReturn.objects.filter(pk=return_id).first()
    if ret is None or not TicketReturn.objects.filter(
        pk=return_id, status=R.RESOLD, refund_id=named
    ).update(refund_id=to):
        return False
    data = {"return_id": str(return_id)}
    if to is not None:
        data["refund_id"] = str(to)
    if named is not None:
        data["failed_refund_id"] = str(named)
    ticket_log(
        ticket_id=ret.ticket_id, kind=kind, actor=actor, data={**data, "amount": ret.refund_amount}
    )
    return True
