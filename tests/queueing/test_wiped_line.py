"""After a Redis wipe the waiting set starts again from nothing: a new joiner
lands in it alone. Until the line is rebuilt from Postgres, a rank in that
set is not an answer (it would tell the joiner "place 1", as the real first
customer is told): joins, position reads and the queue's length answer from
Postgres, and the next admission tick rebuilds the line."""

from __future__ import annotations

import pytest

from queueing import services
from queueing.selectors import queue_length
from queueing.store import queue_store
from tests.support.metrics import heals
from tests.support.sales import join, make_event

pytestmark = pytest.mark.django_db


def tick(event):
    return services.admission_tick_event(event_id=event.id)


def place(event, customer) -> tuple[str, int | None]:
    answer = services.queue_position(event_id=event.id, customer_id=customer.id)
    return answer.status, answer.position


def line(event) -> list[str]:
    store = queue_store()
    return store.r.zrange(store.waiting_key(event.id), 0, -1)


def test_a_joiner_after_a_wipe_is_told_their_place_in_the_whole_line(redis_clean):
    event = make_event(tickets=2, max_active_admitted=1)
    tick(event)
    admitted, _ = join(event)
    tick(event)  # one admitted: no slot left, the rest wait
    waiting = [join(event)[0] for _ in range(3)]
    redis_clean.flushdb()

    newcomer, joined = join(event)

    assert (joined.status, joined.position) == ("WAITING", 4)
    assert place(event, waiting[0]) == ("WAITING", 1)
    assert place(event, newcomer) == ("WAITING", 4)
    assert queue_length(event_id=event.id) == 4
    assert place(event, admitted)[0] == "ADMITTED"


def test_the_next_tick_rebuilds_the_line_and_redis_answers_again(redis_clean):
    event = make_event(tickets=2, max_active_admitted=1)
    tick(event)
    admitted, _ = join(event)
    tick(event)
    waiting = [join(event)[0] for _ in range(3)]
    redis_clean.flushdb()
    newcomer, _ = join(event)

    report = tick(event)

    assert line(event) == [str(c.id) for c in [*waiting, newcomer]]
    assert (report.admitted, report.rebuilt) == (0, True)
    store = queue_store()
    assert store.r.zrange(store.admitted_key(event.id), 0, -1) == [str(admitted.id)]
    assert store.served(event_id=event.id) == 1
    _, joined = join(event)
    assert (joined.status, joined.position) == ("WAITING", 5)
    assert place(event, newcomer) == ("WAITING", 4)
    assert queue_length(event_id=event.id) == 5
    assert tick(event).rebuilt is False


def test_a_line_that_merely_emptied_is_still_redis_to_answer():
    """The set of a line that emptied is gone too (Redis drops an empty
    sorted set), but the line marker stays: the next joiner is first."""
    event = make_event(tickets=5)
    tick(event)
    join(event)
    assert tick(event).admitted == 1
    assert line(event) == []

    _, joined = join(event)

    assert (joined.status, joined.position) == ("WAITING", 1)
    assert tick(event).rebuilt is False


def test_a_wipe_healed_by_the_tick_counts_as_routine_not_as_divergence(redis_clean):
    """Joiners since the wipe have added themselves, so the sets are not
    empty when the tick rebuilds them: the gone line marker still says
    "wiped" (a divergence would page someone)."""
    event = make_event(tickets=2, max_active_admitted=1)
    tick(event)
    join(event)
    tick(event)
    for _ in range(3):
        join(event)
    redis_clean.flushdb()
    join(event)
    rebuilt, diverged = heals("queue_rebuilt"), heals("queue_divergence")

    report = tick(event)

    assert (report.readmitted, report.rebuilt) == (1, True)
    # 1 admitted (the tick) + the 3 who waited before the wipe (the rebuild)
    assert (heals("queue_rebuilt"), heals("queue_divergence")) == (rebuilt + 4, diverged)
