"""Disputes and reversals: the customer's bank takes (or may take) the money
of a paid payment back. Recorded in the payment's log and flagged on the
payment and its claim for staff; the tickets stay valid until staff decide
(keep them, or refund / accept that the money went back and release them).

Every function here runs inside the caller's transaction with the payment
row locked.
"""

from __future__ import annotations

import logging
from typing import Any

from django.utils import timezone

from claims.services import (
    claim_dispute_clear,
    claim_dispute_flag,
    claim_lock,
    purchase_balance,
    purchase_post,
)
from ledger.domain import Bucket, Dispute, EntryKind, Move, dispute_lost_moves
from payments.domain import (
    DISPUTE_NEEDS_STAFF,
    MONEY_TAKEN_STATUSES,
    DisputeState,
    EventKind,
    PaymentStatus,
    dispute_state_of,
)
from payments.models import Payment
from payments.services.records import payment_log

logger = logging.getLogger(__name__)


def dispute_mark(
    *,
    payment: Payment,
    state: DisputeState,
    actor: str,
    data: dict[str, Any] | None = None,
    amount: int | None = None,
) -> bool:
    """Set the payment's dispute flag (and the claim's); logged when it
    changes, and written in the purchase's account (``amount``: what the
    bank took back when it ruled for the customer, all that the gateway
    held when unknown). Returns whether it changed."""
    previous = payment.dispute
    if previous == state:
        return False
    _account_dispute(payment, state, actor=actor, amount=amount)
    now = timezone.now()
    disputed_at = payment.disputed_at or now
    Payment.objects.filter(pk=payment.pk).update(
        dispute=state.value, disputed_at=disputed_at, updated_at=now
    )
    payment.dispute, payment.disputed_at = state.value, disputed_at
    payment_log(
        payment=payment,
        kind=EventKind.DISPUTE,
        actor=actor,
        data={"from": previous, "to": state.value, **(data or {})},
    )
    if state in DISPUTE_NEEDS_STAFF:
        claim_dispute_flag(claim_id=payment.claim_id)
        logger.error(
            "payment %s (%s) is %s at the customer's bank: staff must decide on its tickets",
            payment.reference,
            payment.status,
            state.value,
        )
    else:
        claim_dispute_clear(claim_id=payment.claim_id)
        logger.warning("payment %s dispute now %s", payment.reference, state.value)
    return True


_ENTRY_OF = {
    DisputeState.OPEN: EntryKind.DISPUTE_OPENED,
    DisputeState.WON: EntryKind.DISPUTE_WON,
    DisputeState.LOST: EntryKind.DISPUTE_LOST,
    DisputeState.REVERSED: EntryKind.DISPUTE_LOST,
}


def _account_dispute(
    payment: Payment, state: DisputeState, *, actor: str, amount: int | None
) -> None:
    """The dispute in the purchase's account: once the bank took money back,
    returns and resale refunds of the purchase are closed by it
    (``ledger.domain``). Only a payment whose money was taken has one."""
    kind = _ENTRY_OF.get(state)
    if kind is None or payment.status not in (*MONEY_TAKEN_STATUSES, PaymentStatus.REFUNDED):
        return
    claim = claim_lock(claim_id=payment.claim_id)
    balance = purchase_balance(claim)
    if kind != EntryKind.DISPUTE_LOST:
        moves = [Move(kind)]
    elif balance.dispute == Dispute.LOST:
        return  # the bank took it once
    else:
        held = balance.taken - balance[Bucket.REFUNDED] - balance[Bucket.IN_FLIGHT]
        moves = dispute_lost_moves(balance, amount=amount if amount else max(0, held))
    purchase_post(claim, moves, actor=actor, payment_id=payment.pk, note=state.value)


def apply_dispute_webhook(
    *, payment: Payment, event: str, data: dict[str, Any], actor: str = "webhook"
) -> DisputeState:
    """``charge.dispute.create`` / ``remind`` / ``resolve`` for one of our
    payments. A resolution for the customer keeps the flag up: the money went
    back, and staff decide what becomes of the tickets."""
    resolution = data.get("resolution")
    state = dispute_state_of(
        event=event, resolution=resolution if isinstance(resolution, str) else None
    )
    refund_amount = data.get("refund_amount")
    dispute_mark(
        payment=payment,
        state=state,
        actor=actor,
        amount=refund_amount if isinstance(refund_amount, int) and refund_amount > 0 else None,
        data={
            "event": event,
            "dispute_id": data.get("id"),
            "status": data.get("status"),
            "resolution": resolution,
            "category": data.get("category"),
            "refund_amount": data.get("refund_amount"),
            "due_at": data.get("dueAt"),
        },
    )
    return state


def dispute_close(*, payment: Payment, actor: str, note: str = "") -> bool:
    """Staff decided (kept the tickets, or the money went back through a
    refund): the flag comes down on the payment and its claim."""
    if not payment.dispute or payment.dispute in (DisputeState.CLOSED, DisputeState.WON):
        return False
    return dispute_mark(
        payment=payment, state=DisputeState.CLOSED, actor=actor, data={"note": note}
    )
