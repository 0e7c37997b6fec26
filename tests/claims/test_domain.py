"""The claim state machine, without a database."""

import pytest

from claims.domain import (
    CLAIM_MACHINE,
    CODE_ALPHABET,
    HOLDING_STATUSES,
    ISSUED_TICKET_MACHINE,
    ClaimStatus,
    IssuedTicketStatus,
    ReleaseReason,
    release_sources,
    ticket_code_display,
    ticket_code_new,
    ticket_code_normalize,
)
from fairqueue.states import IllegalTransition

C = ClaimStatus
R = ReleaseReason
T = IssuedTicketStatus


@pytest.mark.parametrize(
    ("source", "target"),
    [
        (C.CLAIMED, C.CONFIRMED),
        (C.CLAIMED, C.RELEASED),
        (C.RELEASED, C.CONFIRMED),
        (C.CONFIRMED, C.RELEASED),
    ],
)
def test_allowed_moves(source, target):
    CLAIM_MACHINE.check(source, target)


@pytest.mark.parametrize(
    ("source", "target"),
    [(C.CONFIRMED, C.CLAIMED), (C.RELEASED, C.CLAIMED)],
)
def test_refused_moves(source, target):
    with pytest.raises(IllegalTransition):
        CLAIM_MACHINE.check(source, target)


@pytest.mark.parametrize(
    ("reason", "sources"),
    [
        (R.CUSTOMER, (C.CLAIMED,)),
        (R.EXPIRED, (C.CLAIMED,)),
        (R.PAYMENT_FAILED, (C.CLAIMED,)),
        (R.STAFF, (C.CLAIMED, C.CONFIRMED)),
        (R.REFUNDED, (C.CLAIMED, C.CONFIRMED)),
    ],
)
def test_only_a_refund_or_staff_release_a_paid_claim(reason, sources):
    assert release_sources(reason) == sources
    assert set(CLAIM_MACHINE.sources_of(C.RELEASED)) == {C.CLAIMED, C.CONFIRMED}


def test_claimed_and_confirmed_hold_tickets():
    assert set(HOLDING_STATUSES) == {C.CLAIMED, C.CONFIRMED}


# --- issued tickets --------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "target"), [(T.VALID, T.USED), (T.VALID, T.VOID), (T.USED, T.VOID)]
)
def test_issued_ticket_moves(source, target):
    ISSUED_TICKET_MACHINE.check(source, target)


@pytest.mark.parametrize(
    ("source", "target"), [(T.USED, T.VALID), (T.VOID, T.VALID), (T.VOID, T.USED)]
)
def test_a_used_or_void_ticket_never_becomes_valid_again(source, target):
    with pytest.raises(IllegalTransition):
        ISSUED_TICKET_MACHINE.check(source, target)


def test_codes_are_16_symbols_of_crockford_base32_and_do_not_repeat():
    codes = {ticket_code_new() for _ in range(2000)}
    assert len(codes) == 2000
    assert all(len(code) == 16 and set(code) <= set(CODE_ALPHABET) for code in codes)
    assert not set("ILOU") & set(CODE_ALPHABET)


def test_a_code_is_shown_in_groups_of_four():
    assert ticket_code_display("ABCD2345EFGH6789") == "ABCD-2345-EFGH-6789"


@pytest.mark.parametrize(
    ("typed", "code"),
    [
        ("ABCD-2345-EFGH-6789", "ABCD2345EFGH6789"),
        ("abcd 2345 efgh 6789", "ABCD2345EFGH6789"),
        ("  abcd2345efgh6789\n", "ABCD2345EFGH6789"),
        ("ABCD-2345-EFGH-678O", "ABCD2345EFGH6780"),  # O read as 0
        ("ABCD-2345-EFGH-67I9", "ABCD2345EFGH6719"),  # I read as 1
        ("ABCD-2345-EFGH-67L9", "ABCD2345EFGH6719"),  # L read as 1
        ("ABCD-2345-EFGH-678", None),  # too short
        ("ABCD-2345-EFGH-6789-0", None),  # too long
        ("ABCD-2345-EFGH-678U", None),  # U is not a symbol
        ("", None),
    ],
)
def test_what_a_scanner_or_a_person_types_becomes_the_stored_code(typed, code):
    assert ticket_code_normalize(typed) == code
