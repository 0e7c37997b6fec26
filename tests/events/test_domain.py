"""The event state machine and sale-window rule, without a database."""

from datetime import UTC, datetime, timedelta
from itertools import product

import pytest

from events.domain import EVENT_MACHINE, EventStatus, in_prequeue, is_on_sale, sale_window_errors
from fairqueue.states import IllegalTransition

S = EventStatus
LEGAL = {
    (S.DRAFT, S.ACTIVE),
    (S.ACTIVE, S.PAUSED),
    (S.ACTIVE, S.SOLD_OUT),
    (S.ACTIVE, S.ENDED),
    (S.PAUSED, S.ACTIVE),
    (S.PAUSED, S.ENDED),
    (S.SOLD_OUT, S.ACTIVE),
    (S.SOLD_OUT, S.ENDED),
}
ALL_PAIRS = list(product(S, S))


@pytest.mark.parametrize(("source", "target"), sorted(LEGAL))
def test_legal_transitions(source, target):
    assert EVENT_MACHINE.can(source, target)
    EVENT_MACHINE.check(source, target)  # does not raise


@pytest.mark.parametrize(("source", "target"), [p for p in ALL_PAIRS if p not in LEGAL])
def test_every_other_transition_is_illegal(source, target):
    assert not EVENT_MACHINE.can(source, target)
    with pytest.raises(IllegalTransition) as exc:
        EVENT_MACHINE.check(source, target)
    assert (exc.value.source, exc.value.target) == (source, target)


def test_the_legal_set_is_exactly_the_diagram():
    assert {p for p in ALL_PAIRS if EVENT_MACHINE.can(*p)} == LEGAL
    assert len(ALL_PAIRS) - len(LEGAL) == 17


def test_ended_is_final_and_draft_has_no_way_back():
    assert EVENT_MACHINE.sources_of(S.DRAFT) == []
    assert not any(EVENT_MACHINE.can(S.ENDED, t) for t in S)


@pytest.mark.parametrize(
    ("target", "sources"),
    [
        (S.ACTIVE, {S.DRAFT, S.PAUSED, S.SOLD_OUT}),
        (S.PAUSED, {S.ACTIVE}),
        (S.SOLD_OUT, {S.ACTIVE}),
        (S.ENDED, {S.ACTIVE, S.PAUSED, S.SOLD_OUT}),
    ],
)
def test_sources_of_is_the_where_clause_of_the_conditional_update(target, sources):
    assert set(EVENT_MACHINE.sources_of(target)) == sources


T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("start", "end", "prequeue", "errors"),
    [
        (T0, T0 + timedelta(hours=1), None, set()),
        (T0, T0 + timedelta(hours=1), T0 - timedelta(minutes=30), set()),
        (T0, T0, None, {"sale_end"}),
        (T0, T0 - timedelta(seconds=1), None, {"sale_end"}),
        (T0, T0 + timedelta(hours=1), T0, {"prequeue_opens_at"}),
        (T0, T0 + timedelta(hours=1), T0 + timedelta(minutes=1), {"prequeue_opens_at"}),
        (T0, T0 - timedelta(hours=1), T0 + timedelta(minutes=1), {"sale_end", "prequeue_opens_at"}),
    ],
)
def test_sale_window_errors(start, end, prequeue, errors):
    found = sale_window_errors(sale_start=start, sale_end=end, prequeue_opens_at=prequeue)
    assert set(found) == errors


@pytest.mark.parametrize(
    ("status", "now", "expected"),
    [
        (S.ACTIVE, T0, True),
        (S.ACTIVE, T0 - timedelta(seconds=1), False),
        (S.ACTIVE, T0 + timedelta(hours=1), False),  # the end is exclusive
        (S.PAUSED, T0 + timedelta(minutes=5), True),
        (S.SOLD_OUT, T0 + timedelta(minutes=5), True),
        (S.DRAFT, T0 + timedelta(minutes=5), False),
        (S.ENDED, T0 + timedelta(minutes=5), False),
    ],
)
def test_is_on_sale(status, now, expected):
    assert is_on_sale(status=status, now=now, sale_start=T0, sale_end=T0 + timedelta(hours=1)) is (
        expected
    )


@pytest.mark.parametrize(
    ("status", "now", "prequeue", "expected"),
    [
        (S.ACTIVE, T0 - timedelta(minutes=10), T0 - timedelta(minutes=30), True),
        (S.ACTIVE, T0 - timedelta(minutes=40), T0 - timedelta(minutes=30), False),
        (S.ACTIVE, T0, T0 - timedelta(minutes=30), False),
        (S.ACTIVE, T0 - timedelta(minutes=10), None, False),
        (S.DRAFT, T0 - timedelta(minutes=10), T0 - timedelta(minutes=30), False),
    ],
)
def test_in_prequeue(status, now, prequeue, expected):
    assert (
        in_prequeue(status=status, now=now, prequeue_opens_at=prequeue, sale_start=T0) is expected
    )
