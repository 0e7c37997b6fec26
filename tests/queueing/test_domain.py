"""Pure rules: no database, no Redis."""

import pytest

from fairqueue.states import IllegalTransition
from queueing.domain import (
    HEAD_PLACES,
    POLL_MAX_SECONDS,
    PREQUEUE_SPREAD_SECONDS,
    QUEUE_MACHINE,
    QueueStatus,
    admission_capacity,
    any_tier_price,
    eta_seconds,
    poll_after_seconds,
)

Q = QueueStatus


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        # the batch is the limit
        (
            {
                "batch_size": 500,
                "max_active_admitted": 5000,
                "admitted_now": 0,
                "free_tickets": 5000,
            },
            500,
        ),
        # admitted-but-unclaimed customers use up tickets
        (
            {
                "batch_size": 500,
                "max_active_admitted": 5000,
                "admitted_now": 4800,
                "free_tickets": 5000,
            },
            200,
        ),
        # the event's cap on people admitted at once
        (
            {
                "batch_size": 500,
                "max_active_admitted": 100,
                "admitted_now": 70,
                "free_tickets": 5000,
            },
            30,
        ),
        # more admitted than tickets left (tickets claimed meanwhile): nobody
        (
            {
                "batch_size": 500,
                "max_active_admitted": 5000,
                "admitted_now": 12,
                "free_tickets": 10,
            },
            0,
        ),
        ({"batch_size": 500, "max_active_admitted": 5000, "admitted_now": 0, "free_tickets": 0}, 0),
    ],
)
def test_admission_capacity(kwargs, expected):
    assert admission_capacity(**kwargs) == expected


def test_eta_is_position_over_rate_rounded_up_plus_the_wait_for_the_sale():
    assert eta_seconds(position=1, rate_per_second=100.0) == 1
    assert eta_seconds(position=250, rate_per_second=100.0) == 3
    assert eta_seconds(position=100, rate_per_second=100.0, wait_before_start=60) == 61


def test_eta_is_unknown_when_nobody_is_admitted():
    assert eta_seconds(position=5, rate_per_second=0.0) is None
    assert eta_seconds(position=5, rate_per_second=None) is None


def poll_after(position, *, rate=100.0, interval=5.0, until_start=0.0, spread=0.0):
    return poll_after_seconds(
        position=position,
        rate_per_second=rate,
        interval=interval,
        until_start=until_start,
        spread=spread,
    )


def test_near_the_head_ask_every_tick():
    # 100/s with a tick every 5 s: the next two ticks reach place 1,000
    assert poll_after(1) == 5
    assert poll_after(1_000) == 5
    # nobody admitted right now: the head still asks every tick
    assert poll_after(HEAD_PLACES, rate=0.0) == 5


def test_further_back_ask_at_the_eta_within_bounds():
    assert poll_after(1_001) == 11  # 1,001 / 100 per s
    assert poll_after(9_000) == 90
    assert poll_after(10**6) == POLL_MAX_SECONDS


def test_nobody_admitted_the_rest_of_the_line_asks_seldom():
    assert poll_after(HEAD_PLACES + 1, rate=0.0) == POLL_MAX_SECONDS
    assert poll_after(HEAD_PLACES + 1, rate=0.001) == POLL_MAX_SECONDS


def test_before_the_start_ask_after_the_draw_spread_by_place():
    assert poll_after(1, until_start=30.0, spread=0.0) == 30
    assert poll_after(1, until_start=30.0, spread=1.0) == 35  # head: at most a tick later
    assert poll_after(40_000, until_start=30.0, spread=0.5) == 30 + PREQUEUE_SPREAD_SECONDS / 2
    assert poll_after(40_000, until_start=30.0, spread=1.0) == 30 + PREQUEUE_SPREAD_SECONDS


def test_queue_machine():
    assert QUEUE_MACHINE.can(Q.WAITING, Q.ADMITTED)
    assert QUEUE_MACHINE.can(Q.WAITING, Q.ABANDONED)
    assert QUEUE_MACHINE.can(Q.ADMITTED, Q.COMPLETED)
    assert QUEUE_MACHINE.can(Q.ADMITTED, Q.EXPIRED)
    assert not QUEUE_MACHINE.can(Q.ADMITTED, Q.ABANDONED)
    assert not QUEUE_MACHINE.can(Q.EXPIRED, Q.ADMITTED)
    with pytest.raises(IllegalTransition):
        QUEUE_MACHINE.check(Q.COMPLETED, Q.WAITING)


def test_an_entry_for_any_tier_is_worth_the_cheapest_tier():
    assert any_tier_price([900_000, 500_000, 700_000]) == 500_000
    assert any_tier_price([]) == 0  # an event without tiers yet
