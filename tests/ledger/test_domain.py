"""The account's rules without a database: each path's entries keep every
bucket where it should be, and the three questions read them."""

from __future__ import annotations

from ledger.domain import (
    Bucket,
    Dispute,
    EntryKind,
    Move,
    balance_of,
    cancel_moves,
    charge_moves,
    dispute_lost_moves,
    money_of,
    outside_refund_moves,
    refund_end_moves,
    refund_moves,
    refundable,
    resale_moves,
    resale_owed,
    sent_moves,
    ticket_move_refusal,
)

FACE, FEE = 500_000, 50_000


def account(*steps) -> list[Move]:
    moves: list[Move] = list(charge_moves(amount=2 * FACE, tickets=2))
    for step in steps:
        moves += step(balance_of(moves, face=FACE))
    return moves


def balance(moves: list[Move]):
    return balance_of(moves, face=FACE)


def test_a_charge_backs_its_tickets():
    paid = balance(account())
    assert (paid.taken, paid[Bucket.HELD], paid.tickets) == (2 * FACE, 2 * FACE, 2)
    assert refundable(paid) == 2 * FACE
    assert ticket_move_refusal(paid) == ""


def test_a_resale_owes_face_minus_fee_and_leaves_the_kept_ticket_refundable():
    resold = balance(account(lambda b: resale_moves(b, owed=FACE - FEE, fee=FEE)))
    assert (resold[Bucket.OWED], resold[Bucket.FEE], resold.tickets) == (FACE - FEE, FEE, 1)
    assert refundable(resold) == FACE  # never the resold ticket's money
    assert resale_owed(resold) == FACE - FEE


def test_a_ticket_sent_on_is_kept_for_its_holder():
    sent = balance(account(sent_moves))
    assert (sent[Bucket.SENT], refundable(sent), sent.tickets) == (FACE, FACE, 1)


def test_a_partial_refund_that_cancels_keeps_the_rest_as_a_fee():
    moves = account(
        lambda b: refund_moves(b, refund_id="r1", amount=150_000, cancels=True, for_resale=False),
        cancel_moves,
    )
    cancelled = balance(moves)
    assert cancelled[Bucket.IN_FLIGHT] == 150_000
    assert cancelled[Bucket.FEE] == 2 * FACE - 150_000
    assert (cancelled.tickets, refundable(cancelled)) == (0, 0)
    assert ticket_move_refusal(cancelled) == "no_ticket"


def test_a_refund_settles_fails_or_settles_for_another_amount():
    asked = account(
        lambda b: refund_moves(b, refund_id="r1", amount=FACE, cancels=False, for_resale=False)
    )
    settled = balance(asked + refund_end_moves(balance(asked), refund_id="r1", settled=FACE))
    assert (settled[Bucket.REFUNDED], settled[Bucket.IN_FLIGHT]) == (FACE, 0)
    failed = balance(asked + refund_end_moves(balance(asked), refund_id="r1", settled=None))
    assert (failed[Bucket.HELD], failed[Bucket.IN_FLIGHT]) == (2 * FACE, 0)
    more = balance(asked + refund_end_moves(balance(asked), refund_id="r1", settled=FACE + 1))
    assert (more[Bucket.REFUNDED], more[Bucket.HELD]) == (FACE + 1, FACE - 1)
    # A refund ends once: a repeat writes nothing.
    twice = asked + refund_end_moves(balance(asked), refund_id="r1", settled=FACE)
    assert refund_end_moves(balance(twice), refund_id="r1", settled=FACE) == []


def test_a_failed_resale_refund_goes_back_to_what_is_owed():
    moves = account(
        lambda b: resale_moves(b, owed=FACE - FEE, fee=FEE),
        lambda b: refund_moves(b, refund_id="r", amount=FACE - FEE, cancels=False, for_resale=True),
        lambda b: refund_end_moves(b, refund_id="r", settled=None),
    )
    assert resale_owed(balance(moves)) == FACE - FEE


def test_a_lost_dispute_takes_what_is_held_then_what_is_owed_and_closes_moves():
    moves = account(
        lambda b: resale_moves(b, owed=FACE - FEE, fee=FEE),
        lambda b: dispute_lost_moves(b, amount=2 * FACE),
        lambda b: [Move(EntryKind.DISPUTE_LOST)],
    )
    lost = balance(moves)
    assert lost.dispute == Dispute.LOST
    assert (lost[Bucket.HELD], lost[Bucket.OWED], lost[Bucket.FEE]) == (0, 0, 0)
    assert lost[Bucket.LOST] == 2 * FACE
    assert (refundable(lost), resale_owed(lost)) == (0, 0)
    assert ticket_move_refusal(lost) == "disputed"
    # A resale after the loss owes nothing: the bank paid the buyer back.
    assert resale_moves(lost, owed=FACE - FEE, fee=FEE)[0].amount == 0


def test_a_refund_made_outside_may_overdraw_and_says_so():
    moves = account(
        sent_moves, lambda b: outside_refund_moves(refund_id="x", amount=2 * FACE, settled=True)
    )
    overdrawn = balance(moves)
    assert overdrawn[Bucket.HELD] == -FACE  # given back twice: the invariants report it
    assert refundable(overdrawn) == 0


def test_an_open_dispute_stops_moves_and_money_reads_in_short():
    opened = balance(account(lambda b: [Move(EntryKind.DISPUTE_OPENED)]))
    assert ticket_move_refusal(opened) == "disputed"
    won = balance(
        account(lambda b: [Move(EntryKind.DISPUTE_OPENED)], lambda b: [Move(EntryKind.DISPUTE_WON)])
    )
    assert ticket_move_refusal(won) == ""
    money = money_of(balance(account(lambda b: resale_moves(b, owed=FACE - FEE, fee=FEE))))
    assert (money.paid, money.refunded, money.refund_pending, money.fee_kept) == (
        2 * FACE,
        0,
        0,
        FEE,
    )
