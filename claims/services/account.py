"""A purchase's account (``ledger``) as the claims app and the payments app
read and write it: one ticket's value is the purchase's face value, and its
currency the purchase's. Callers hold the claim's row lock (or the payment's
that leads to it)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from claims.models import Claim
from fairqueue.errors import Conflict, ErrorCode
from ledger.domain import Balance, Move, ticket_move_refusal
from ledger.services import account_balance, account_post


def face_value(claim: Claim) -> int:
    """One ticket's share of what the purchase paid."""
    return claim.amount // max(claim.quantity, 1)


def purchase_balance(claim: Claim) -> Balance:
    return account_balance(claim_id=claim.pk, face=face_value(claim))


def purchase_post(claim: Claim, moves: Iterable[Move], *, actor: str, **details: Any) -> None:
    account_post(claim_id=claim.pk, moves=moves, currency=claim.currency, actor=actor, **details)


_REFUSALS = {
    "disputed": "The payment for this ticket is disputed at the bank: it cannot be {verb} now.",
    "not_paid_for": "The money for this ticket went back: it cannot be {verb}.",
    "no_ticket": "This order holds no ticket to be {verb}.",
}


def ticket_may_move(claim: Claim, *, verb: str) -> Balance:
    """Whether one of the purchase's tickets may be returned or sent on, read
    from its account (under the claim's row lock); 409 ticket_not_movable
    saying why not. A purchase made by a transfer has no money of its own:
    the ticket it holds is all it needs."""
    balance = purchase_balance(claim)
    refusal = ticket_move_refusal(balance)
    if refusal:
        raise Conflict(
            _REFUSALS[refusal].format(verb=verb),
            code=ErrorCode.TICKET_NOT_MOVABLE,
            details={"reason": refusal},
        )
    return balance
