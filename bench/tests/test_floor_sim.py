"""bench/floor.py, the flash sale's protocol floor: a replay of the sale's
admission rules at zero CPU. Pure and fast (no database): it must obey the
rules it stands for, or the ratio the bench prints beside it means nothing."""

from __future__ import annotations

import random

from bench.floor import Person, Rules, replay
from bench.page import next_read_ms, place_in

BEHAVIOURS = ("abandon_queue", "lapse_admission", "expire_claim", "decline", "abandon_payment")


def crowd(n: int, *, sockets: float = 0.1, misbehave: float = 0.13, seed: int = 3) -> list[Person]:
    """Most arrive in a pre-queue before the sale's start at 30 s, the rest after."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        behaviour = rng.choice(BEHAVIOURS) if rng.random() < misbehave else "pay"
        arrive = rng.uniform(0, 27) if rng.random() < 0.8 else 30 + rng.uniform(0, 60)
        out.append(Person(arrive, behaviour, rng.random() < sockets, rng.uniform(1, 20)))
    return out


RULES = Rules(
    inventory=300, batch_size=50, interval=5, window=60, claim_ttl=30, expiry_interval=10,
    sale_start=30,
)  # fmt: skip


def test_no_tick_admits_more_than_its_batch_or_the_tickets_free():
    floor = replay(crowd(1500), RULES)
    assert floor.ticks
    for tick in floor.ticks:
        assert tick.admitted <= tick.capacity <= RULES.batch_size
        assert tick.admitted_before + tick.admitted <= tick.free_before
    assert sum(t.admitted for t in floor.ticks) > RULES.inventory  # tickets came back
    assert floor.time_to(1.0) is not None
    sold = [n for _, n in floor.sold]
    assert sold == list(range(1, RULES.inventory + 1))  # one at a time, never past the tickets


def test_nobody_is_admitted_before_the_sale_starts_and_the_first_tick_is_at_the_start():
    floor = replay(crowd(500), RULES)
    assert floor.ticks[0].at == 0
    assert all(t >= 0 for t, _ in floor.sold)
    gaps = {b.at - a.at for a, b in zip(floor.ticks, floor.ticks[1:], strict=False)}
    assert gaps == {RULES.interval}


def test_a_slower_tick_or_a_smaller_batch_sells_later():
    people = crowd(1500)
    base = replay(people, RULES).time_to(0.95)
    slower = replay(people, Rules(**{**vars(RULES), "interval": 10})).time_to(0.95)
    smaller = replay(people, Rules(**{**vars(RULES), "batch_size": 20})).time_to(0.95)
    later = replay(people, Rules(**{**vars(RULES), "tick_phase": 4})).time_to(0.95)
    assert base is not None and slower is not None and smaller is not None and later is not None
    assert slower > base
    assert smaller > base
    assert later > base


def test_pages_without_a_socket_learn_later_than_the_push():
    pushed = [Person(p.arrive_at, p.behaviour, True, p.leave_after) for p in crowd(1500)]
    polled = [Person(p.arrive_at, p.behaviour, False, p.leave_after) for p in pushed]
    by_push, by_page = replay(pushed, RULES), replay(polled, RULES)
    assert by_push.reads == 0
    assert by_page.reads > 0 and by_page.draw_reads > 0  # pre-queue numbers learnt again
    assert by_page.time_to(0.5) > by_push.time_to(0.5)


def test_pre_queue_pages_with_a_key_read_their_number_from_the_draw_never_asking():
    polled = [Person(p.arrive_at, p.behaviour, False, p.leave_after) for p in crowd(1500)]
    documents = replay(polled, RULES)
    asking = replay(polled, Rules(**{**vars(RULES), "draw_documents": False}))
    assert documents.relearns == 0 and documents.draw_reads > 0
    assert asking.relearns > 0 and asking.draw_reads == 0
    # Every admitted page learns it all the same: the tickets sell out.
    assert documents.time_to(1.0) is not None and asking.time_to(1.0) is not None
    assert documents.learnt == asking.learnt


def test_the_replay_is_the_same_for_a_seed():
    people = crowd(800)
    assert replay(people, RULES, seed=5).sold == replay(people, RULES, seed=5).sold


def test_the_page_rules_read_every_tick_near_the_head_and_rarely_far_back():
    state = {
        "status": "ACTIVE", "epoch": 1, "served": 100, "frontier": 99, "admission_batch_size": 50,
        "interval_seconds": 5, "next_tick_at": 5_000, "rate_per_second": 10.0,
    }  # fmt: skip
    near = next_read_ms(state, 60, 0, lambda: 0.5)
    far = next_read_ms(state, 5_000, 0, lambda: 0.5)
    assert near is not None and far is not None
    assert near < 5_000 + 2_000 <= 10_000 < far <= 30_000 + 1_500
    number = {"position": 40, "served": 60, "score": 99, "epoch": 1}
    assert place_in(number, state).admitted
    assert not place_in({**number, "score": 100}, state).admitted
    assert place_in({**number, "epoch": 0}, state).relearn
    assert next_read_ms({**state, "status": "ENDED"}, 1, 0, lambda: 0.5) is None
