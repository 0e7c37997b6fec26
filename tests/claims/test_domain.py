"""The claim state machine, without a database."""

import pytest

from claims.domain import CLAIM_MACHINE, HOLDING_STATUSES, UNPAID_RELEASE_SOURCES, ClaimStatus
from fairqueue.states import IllegalTransition

C = ClaimStatus


@pytest.mark.parametrize(
    ("source", "target"),
    [
        (C.CLAIMED, C.CONFIRMED),
        (C.CLAIMED, C.RELEASED),
        (C.RELEASED, C.CONFIRMED),
        (C.CONFIRMED, C.RELEASED),  # refunded: the tickets go back on sale
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


def test_only_a_claimed_claim_is_released_by_customers_expiry_and_staff():
    assert CLAIM_MACHINE.sources_of(C.RELEASED) == [C.CLAIMED, C.CONFIRMED]
    assert UNPAID_RELEASE_SOURCES == (C.CLAIMED,)


def test_claimed_and_confirmed_hold_tickets():
    assert set(HOLDING_STATUSES) == {C.CLAIMED, C.CONFIRMED}
