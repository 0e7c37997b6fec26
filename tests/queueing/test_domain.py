"""Pure rules: no database, no Redis."""

import pytest

from fairqueue.states import IllegalTransition
from queueing.domain import QUEUE_MACHINE, QueueStatus, admission_capacity, eta_seconds

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


def test_queue_machine():
    assert QUEUE_MACHINE.can(Q.WAITING, Q.ADMITTED)
    assert QUEUE_MACHINE.can(Q.WAITING, Q.ABANDONED)
    assert QUEUE_MACHINE.can(Q.ADMITTED, Q.COMPLETED)
    assert QUEUE_MACHINE.can(Q.ADMITTED, Q.EXPIRED)
    assert not QUEUE_MACHINE.can(Q.ADMITTED, Q.ABANDONED)
    assert not QUEUE_MACHINE.can(Q.EXPIRED, Q.ADMITTED)
    with pytest.raises(IllegalTransition):
        QUEUE_MACHINE.check(Q.COMPLETED, Q.WAITING)
