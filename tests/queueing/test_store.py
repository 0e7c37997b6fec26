"""The Redis store's bulk path (pipelined ZADD) and the readmit batches."""

from __future__ import annotations

import pytest

from fairqueue.redis import RedisUnavailable
from queueing.store import REBUILD_BATCH, queue_store


def test_add_many_sends_exact_scores_in_batches(redis_clean):
    store = queue_store()
    members = [(f"member-{i:06d}", 10**15 + i) for i in range(REBUILD_BATCH * 2 + 7)]
    assert store.add_many(key="fq:{t}:z", members=iter(members)) == len(members)
    assert store.r.zcard("fq:{t}:z") == len(members)
    assert store.r.zrange("fq:{t}:z", 0, 2, withscores=True) == [
        (m, float(s)) for m, s in members[:3]
    ]
    assert store.r.zscore("fq:{t}:z", members[-1][0]) == members[-1][1]


def test_add_many_only_existing_updates_but_never_adds(redis_clean):
    store = queue_store()
    store.r.zadd("fq:{t}:z", {"a": 100, "b": 200})
    sent = store.add_many(key="fq:{t}:z", members=[("b", 1), ("c", 2)], only_existing=True)
    assert sent == 2
    assert store.r.zrange("fq:{t}:z", 0, -1, withscores=True) == [("b", 1.0), ("a", 100.0)]


def test_add_many_raises_an_error_reply_and_leaves_the_pool_usable(redis_clean):
    store = queue_store()
    store.r.set("fq:{t}:z", "not a sorted set")
    with pytest.raises(RedisUnavailable):
        store.add_many(key="fq:{t}:z", members=[("a", 1)])
    assert store.r.get("fq:{t}:z") == "not a sorted set"
    assert store.r.ping() is True


def test_add_many_stops_cleanly_when_the_rows_fail(redis_clean):
    store = queue_store()

    def rows():
        yield ("a", 1)
        raise RuntimeError("postgres went away")

    with pytest.raises(RuntimeError):
        store.add_many(key="fq:{t}:z", members=rows())
    assert store.r.zcard("fq:{t}:z") == 0
    assert store.r.ping() is True


def test_readmit_moves_every_member_in_batches_and_sets_served_once(redis_clean):
    store = queue_store()
    event = "e"
    members = [(f"m-{i:06d}", 10**12 + i) for i in range(REBUILD_BATCH * 2 + 3)]
    store.r.zadd(store.waiting_key(event), {m: 1 for m, _ in members[:5]})
    store.r.zadd(store.admitted_key(event), {members[0][0]: members[0][1]})  # already right

    moved = store.readmit(event_id=event, members=members, served=42)

    assert moved == [m for m, _ in members[1:]]
    assert store.r.zcard(store.waiting_key(event)) == 0
    assert store.r.zcard(store.admitted_key(event)) == len(members)
    assert store.r.zscore(store.admitted_key(event), members[-1][0]) == members[-1][1]
    assert store.served(event_id=event) == 42
    # The counter never goes back.
    assert store.readmit(event_id=event, members=[], served=7) == []
    assert store.served(event_id=event) == 42


def test_places_reads_the_served_counter_and_each_rank_in_one_round_trip(redis_clean):
    store = queue_store()
    store.r.zadd(store.waiting_key("e"), {"a": 30, "b": 10, "c": 20})
    store.r.set(store.served_key("e"), 7)
    assert store.places(event_id="e", customer_ids=["a", "b", "gone"]) is None  # line not built
    store.line_mark(event_id="e")
    assert store.places(event_id="e", customer_ids=["a", "b", "gone"]) == (7, {"a": 3, "b": 1})
