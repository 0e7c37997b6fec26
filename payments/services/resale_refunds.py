"""The refund a resold ticket's first buyer is owed: face value minus the
organizer's fee, through the gateway's Refund API, automatically. Opened
after the resale committed (``ticket_resold``); refund reconciliation opens
any whose news was lost. The purchase keeps its other tickets and its
payment stays CONFIRMED (``Refund.for_resale``)."""

from __future__ import annotations

import logging
import uuid

from django.db import transaction

from claims.domain import ReturnStatus
from claims.models import TicketReturn
from claims.services import claim_lock, purchase_balance
from claims.services.resold import (
    NOTHING_OWED,
    ticket_return_refund_closed,
    ticket_return_refund_opened,
    ticket_return_refund_retry,
)
from fairqueue.errors import InvalidInput, InvalidTransition
from ledger.domain import Dispute, resale_owed
from payments.attention import resale_refunds_failed
from payments.domain import OPEN_REFUND_STATUSES, PAID_STATUSES, EventKind, PaymentStatus
from payments.models import Payment, Refund
from payments.services.outcomes import payment_lock
from payments.services.records import payment_log
from payments.services.refunds import GATEWAY, refund_open_locked, refund_send

logger = logging.getLogger(__name__)


class _Taken(Exception):
    """Another run opened this return's refund first: roll ours back."""


def resale_refund_open(*, return_id: uuid.UUID | str) -> str:
    """Open and send the refund of a RESOLD return; idempotent (the
    payment's row lock serialises two runs, the return's ``refund_id`` says
    it is done). What it sends is what the purchase's account still owes
    for resales (``ledger.domain.resale_owed``), read under the claim's row
    lock: a refund of the whole purchase never took it, and a dispute the
    buyer won at the bank did (the return's refund is then closed: the
    bank paid it). It waits while another refund of ours is open (one at a
    time) or a dispute is open; the next reconciliation pass tries again."""
    ret = TicketReturn.objects.filter(pk=return_id).first()
    if ret is None or ret.status != ReturnStatus.RESOLD or ret.refund_id or ret.refund_amount <= 0:
        return "skipped"
    if ret.end_reason:
        return "skipped"
    payment = Payment.objects.filter(claim_id=ret.claim_id, status__in=PAID_STATUSES).first()
    if payment is None:
        logger.error("return %s was resold but its purchase has no paid payment", return_id)
        return "no_payment"
    try:
        with transaction.atomic():
            payment = payment_lock(payment_id=payment.pk)
            open_ours = Refund.objects.filter(payment=payment, status__in=OPEN_REFUND_STATUSES)
            if open_ours.exclude(requested_by=GATEWAY).exists():
                return "waiting"
            balance = purchase_balance(claim_lock(claim_id=ret.claim_id))
            if balance.dispute == Dispute.OPEN:
                return "waiting"
            owed = min(ret.refund_amount, resale_owed(balance))
            if owed <= 0:
                ticket_return_refund_closed(return_id=ret.pk, reason=NOTHING_OWED)
                logger.warning(
                    "return %s: its purchase owes nothing more (%s)", ret.pk, balance.dispute
                )
                return "closed"
            refund = refund_open_locked(
                payment=payment,
                actor="resale",
                reason=f"ticket resold (return {ret.pk})",
                amount=owed,
                for_resale=True,
            )
            if not ticket_return_refund_opened(return_id=ret.pk, refund_id=refund.pk):
                raise _Taken
    except _Taken:
        return "skipped"
    except (InvalidTransition, InvalidInput) as exc:
        logger.error("resale refund of return %s refused: %s", return_id, exc)
        return "refused"
    refund_send(refund_id=refund.pk, actor="resale")
    return "sent"


def resale_refunds_due(*, limit: int) -> list[uuid.UUID]:
    """RESOLD returns whose refund was never opened (its news was lost, or
    the payment had another refund open)."""
    return list(
        TicketReturn.objects.filter(
            status=ReturnStatus.RESOLD, refund_id__isnull=True, refund_amount__gt=0, end_reason=""
        )
        .order_by("resold_at")
        .values_list("id", flat=True)[:limit]
    )


def resale_refund_retry(*, payment_id: uuid.UUID, actor: str) -> list[str]:
    """Staff ask the gateway again for this payment's resale refunds that
    failed (``refund_failed`` in the needs-attention list): each return gets
    a new refund, opened and sent as after the resale; one beyond the first
    waits for it to settle, and reconciliation opens it then. Returns what
    happened to each. Raises InvalidTransition when none failed."""
    with transaction.atomic():
        payment = payment_lock(payment_id=payment_id)
        failed = [
            (return_id, refund_id)
            for return_id, refund_id in resale_refunds_failed()
            .filter(claim_id=payment.claim_id)
            .order_by("resold_at")
            .values_list("pk", "refund_id")
            if refund_id is not None
        ]
        if payment.status != PaymentStatus.CONFIRMED or not failed:
            raise InvalidTransition("This payment has no failed resale refund to retry.")
        payment_log(
            payment=payment,
            kind=EventKind.STAFF_ACTION,
            actor=actor,
            data={"action": "retry_resale_refund", "returns": [str(pk) for pk, _ in failed]},
        )
        for return_id, refund_id in failed:
            ticket_return_refund_retry(return_id=return_id, failed_refund_id=refund_id, actor=actor)
    return [resale_refund_open(return_id=return_id) for return_id, _ in failed]
