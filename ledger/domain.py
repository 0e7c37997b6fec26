"""The rules of a purchase's account (no Django). docs/PAYMENTS.md draws them.

Every movement of a purchase's money and tickets is one entry: ``amount``
minor units move from one bucket (``debit``) to another (``credit``), and
``tickets`` says how many tickets the purchase holds more (or fewer) after
it. Money enters an account only by a charge (from outside, ``debit`` empty)
and never leaves it: what went back to the buyer sits in REFUNDED, what the
bank took back in LOST. So what was taken always equals the sum of the
buckets, and each bucket says what that money is for now:

    HELD       backs the tickets the purchase still holds (or, once it holds
               none, is the buyer's to get back)
    OWED       the buyer's for tickets resold (face value minus the fee)
    IN_FLIGHT  asked of the gateway, not settled yet
    REFUNDED   back with the buyer
    FEE        kept by the organizer (a return fee, a cancellation fee)
    SENT       kept for tickets sent on to someone else (they hold them)
    LOST       taken back by the buyer's bank (a dispute lost, a reversal)

What a purchase may still be refunded (``refundable``), what it is owed
after a resale (``resale_owed``) and whether a ticket may be returned or
sent (``ticket_move_refusal``) are read from the balance, one function each;
so are the entries each money path writes (``*_moves``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum


class Bucket(StrEnum):
    HELD = "held"
    OWED = "owed"
    IN_FLIGHT = "in_flight"
    REFUNDED = "refunded"
    FEE = "fee"
    SENT = "sent"
    LOST = "lost"


OUTSIDE = ""  # where a charge comes from


class EntryKind(StrEnum):
    CHARGE = "charge"  # the gateway took the money: OUTSIDE -> HELD
    REFUND_ASKED = "refund_asked"  # HELD or OWED -> IN_FLIGHT
    REFUND_SETTLED = "refund_settled"  # IN_FLIGHT -> REFUNDED
    REFUND_FAILED = "refund_failed"  # IN_FLIGHT -> back where it came from
    REFUND_OUTSIDE = "refund_outside"  # a refund we did not ask for (dashboard, by hand)
    FEE_KEPT = "fee_kept"  # HELD -> FEE
    CANCELLED = "cancelled"  # the purchase gave up its tickets (a refund, staff)
    DISPUTE_OPENED = "dispute_opened"
    DISPUTE_WON = "dispute_won"
    DISPUTE_LOST = "dispute_lost"  # HELD, then OWED -> LOST
    TICKET_RETURNED = "ticket_returned"  # on resale: still the purchase's
    TICKET_WITHDRAWN = "ticket_withdrawn"
    TICKET_RESOLD = "ticket_resold"  # HELD -> OWED, one ticket fewer
    TICKET_SENT = "ticket_sent"  # HELD -> SENT, one ticket fewer
    TICKET_RECEIVED = "ticket_received"  # one ticket more, no money


KIND_LABELS = {
    EntryKind.CHARGE: "Paid",
    EntryKind.REFUND_ASKED: "Refund asked for",
    EntryKind.REFUND_SETTLED: "Refund paid back",
    EntryKind.REFUND_FAILED: "Refund failed",
    EntryKind.REFUND_OUTSIDE: "Refunded outside FairQueue",
    EntryKind.FEE_KEPT: "Kept as a fee",
    EntryKind.CANCELLED: "Order cancelled",
    EntryKind.DISPUTE_OPENED: "Disputed at the bank",
    EntryKind.DISPUTE_WON: "Dispute won",
    EntryKind.DISPUTE_LOST: "Taken back by the bank",
    EntryKind.TICKET_RETURNED: "Ticket returned for resale",
    EntryKind.TICKET_WITHDRAWN: "Return withdrawn",
    EntryKind.TICKET_RESOLD: "Ticket resold",
    EntryKind.TICKET_SENT: "Ticket sent on",
    EntryKind.TICKET_RECEIVED: "Ticket received",
}


@dataclass(frozen=True)
class Move:
    """One entry as the rules see it."""

    kind: EntryKind
    amount: int = 0
    debit: str = OUTSIDE
    credit: str = OUTSIDE
    tickets: int = 0
    refund_id: str | None = None


class Dispute(StrEnum):
    NONE = ""
    OPEN = "open"
    WON = "won"
    LOST = "lost"


@dataclass(frozen=True)
class Asked:
    amount: int
    origin: str  # the bucket it came from, and goes back to if it fails


@dataclass
class Balance:
    """A purchase's account read from its entries (``balance_of``)."""

    face: int  # one ticket's value
    taken: int = 0
    tickets: int = 0
    dispute: Dispute = Dispute.NONE
    buckets: dict[str, int] = field(default_factory=lambda: {b.value: 0 for b in Bucket})
    asked: dict[str, Asked] = field(default_factory=dict)  # refund id -> its request
    ended: set[str] = field(default_factory=set)  # refunds settled or failed

    def __getitem__(self, bucket: Bucket) -> int:
        return self.buckets[bucket.value]

    @property
    def in_flight(self) -> dict[str, Asked]:
        return {k: v for k, v in self.asked.items() if k not in self.ended}


def balance_of(moves: Iterable[Move], *, face: int) -> Balance:
    balance = Balance(face=face)
    for move in moves:
        if move.kind == EntryKind.CHARGE:
            balance.taken += move.amount
        if move.debit:
            balance.buckets[move.debit] -= move.amount
        if move.credit:
            balance.buckets[move.credit] += move.amount
        balance.tickets += move.tickets
        if move.refund_id and move.kind == EntryKind.REFUND_ASKED:
            balance.asked[move.refund_id] = Asked(move.amount, move.debit)
        elif move.refund_id and move.kind in (EntryKind.REFUND_SETTLED, EntryKind.REFUND_FAILED):
            balance.ended.add(move.refund_id)
        elif move.kind == EntryKind.DISPUTE_OPENED:
            balance.dispute = Dispute.OPEN
        elif move.kind == EntryKind.DISPUTE_WON:
            balance.dispute = Dispute.WON
        elif move.kind == EntryKind.DISPUTE_LOST:
            balance.dispute = Dispute.LOST
    return balance


# --- what a purchase may do -------------------------------------------------------


def refundable(balance: Balance) -> int:
    """What a refund of the purchase may give back: the money backing the
    tickets it still holds (or all it holds once it holds none). Never a
    ticket that was sent on, resold (its own refund) or taken back by the bank."""
    return max(0, balance[Bucket.HELD])


def resale_owed(balance: Balance) -> int:
    """What the buyer is still owed for tickets resold and not yet asked for."""
    return max(0, balance[Bucket.OWED])


def ticket_move_refusal(balance: Balance) -> str:
    """Empty when one of the purchase's tickets may be returned or sent on;
    else why not: ``disputed`` (the bank is taking or took the money back),
    ``not_paid_for`` (no money backs it any more), ``no_ticket``."""
    if balance.dispute in (Dispute.OPEN, Dispute.LOST):
        return "disputed"
    if balance.tickets < 1:
        return "no_ticket"
    if balance[Bucket.HELD] < balance.face:
        return "not_paid_for"
    return ""


# --- the entries each path writes -------------------------------------------------


def charge_moves(*, amount: int, tickets: int) -> list[Move]:
    return [Move(EntryKind.CHARGE, amount, OUTSIDE, Bucket.HELD, tickets)]


def refund_moves(
    balance: Balance, *, refund_id: str, amount: int, cancels: bool, for_resale: bool
) -> list[Move]:
    """A refund we ask the gateway for. ``cancels``: the purchase gives up
    the tickets it holds, and what it held beyond ``amount`` is kept as a
    cancellation fee."""
    if for_resale:
        return [Move(EntryKind.REFUND_ASKED, amount, Bucket.OWED, Bucket.IN_FLIGHT, 0, refund_id)]
    moves = [Move(EntryKind.REFUND_ASKED, amount, Bucket.HELD, Bucket.IN_FLIGHT, 0, refund_id)]
    if cancels:
        moves += cancel_moves(balance, keep=balance[Bucket.HELD] - amount)
    return moves


def cancel_moves(balance: Balance, *, keep: int = 0) -> list[Move]:
    """The purchase gives up the tickets it holds; ``keep`` of what it held
    goes to the organizer as a fee."""
    moves = []
    if keep > 0:
        moves.append(Move(EntryKind.FEE_KEPT, keep, Bucket.HELD, Bucket.FEE))
    if balance.tickets:
        moves.append(Move(EntryKind.CANCELLED, 0, tickets=-balance.tickets))
    return moves


def refund_end_moves(balance: Balance, *, refund_id: str, settled: int | None) -> list[Move]:
    """A refund of ours settles (``settled``: what the gateway gave back) or
    fails (None): its money leaves IN_FLIGHT. A gateway that gave back more
    than asked took the rest from HELD; less, and the rest goes back."""
    asked = balance.asked.get(refund_id)
    if asked is None or refund_id in balance.ended:
        return []
    if settled is None:
        return [
            Move(
                EntryKind.REFUND_FAILED, asked.amount, Bucket.IN_FLIGHT, asked.origin, 0, refund_id
            )
        ]
    moves = [
        Move(
            EntryKind.REFUND_SETTLED,
            min(settled, asked.amount),
            Bucket.IN_FLIGHT,
            Bucket.REFUNDED,
            0,
            refund_id,
        )
    ]
    if settled < asked.amount:
        moves.append(
            Move(EntryKind.REFUND_FAILED, asked.amount - settled, Bucket.IN_FLIGHT, asked.origin)
        )
    elif settled > asked.amount:
        moves.append(
            Move(EntryKind.REFUND_OUTSIDE, settled - asked.amount, Bucket.HELD, Bucket.REFUNDED)
        )
    return moves


def outside_refund_moves(*, refund_id: str | None, amount: int, settled: bool) -> list[Move]:
    """A refund we did not ask for (made in the gateway's dashboard, or by
    hand and recorded by staff): it comes out of HELD, even past zero (the
    balance then shows money given back twice)."""
    if not settled:
        return [Move(EntryKind.REFUND_ASKED, amount, Bucket.HELD, Bucket.IN_FLIGHT, 0, refund_id)]
    return [Move(EntryKind.REFUND_OUTSIDE, amount, Bucket.HELD, Bucket.REFUNDED, 0, refund_id)]


def resale_moves(balance: Balance, *, owed: int, fee: int) -> list[Move]:
    """One of the purchase's tickets was resold: it is owed ``owed`` (face
    value minus the fee) and the organizer keeps ``fee``, both from what
    backed the ticket (nothing when the bank took that back)."""
    held = max(0, balance[Bucket.HELD])
    to_buyer = min(owed, held)
    kept = min(fee, held - to_buyer)
    moves = [Move(EntryKind.TICKET_RESOLD, to_buyer, Bucket.HELD, Bucket.OWED, -1)]
    if kept:
        moves.append(Move(EntryKind.FEE_KEPT, kept, Bucket.HELD, Bucket.FEE))
    return moves


def sent_moves(balance: Balance) -> list[Move]:
    """One ticket sent on: the money that backed it is kept for it."""
    value = min(balance.face, max(0, balance[Bucket.HELD]))
    return [Move(EntryKind.TICKET_SENT, value, Bucket.HELD, Bucket.SENT, -1)]


def dispute_lost_moves(balance: Balance, *, amount: int) -> list[Move]:
    """The bank took ``amount`` back: first what backs the tickets held and
    what a resale still owes (the buyer has it back now), then what the
    organizer kept (fees, the money of tickets sent on: lost to them);
    anything beyond was given back twice (HELD goes below zero)."""
    moves = []
    left = amount
    for bucket in (Bucket.HELD, Bucket.OWED, Bucket.FEE, Bucket.SENT):
        taken = min(left, max(0, balance[bucket]))
        if taken:
            moves.append(Move(EntryKind.DISPUTE_LOST, taken, bucket, Bucket.LOST))
            left -= taken
    if left or not moves:
        moves.append(Move(EntryKind.DISPUTE_LOST, left, Bucket.HELD, Bucket.LOST))
    return moves


# --- what the buyer sees ----------------------------------------------------------


@dataclass(frozen=True)
class Money:
    paid: int
    refunded: int
    refund_pending: int
    fee_kept: int


def money_of(balance: Balance) -> Money:
    return Money(
        paid=balance.taken,
        refunded=balance[Bucket.REFUNDED],
        refund_pending=balance[Bucket.IN_FLIGHT],
        fee_kept=balance[Bucket.FEE],
    )
