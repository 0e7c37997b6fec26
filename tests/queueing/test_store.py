"""The Redis store's bulk path (hand-encoded, pipelined ZADD)."""

from __future__ import annotations

import time

import pytest
import redis

from fairqueue.redis import RedisUnavailable
from queueing import store as store_module
from queueing.bulk import PipelinedSender
from queueing.store import REBUILD_BATCH, queue_store
from tests.support.races import race


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


def _wait_for(condition, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.005)


def test_a_write_failing_mid_bulk_gives_the_connection_back_to_the_pool_once(
    redis_clean, monkeypatch
):
    """Redis drops the bulk's connection after its first batch: the writer
    thread's next write fails, the next batch meets that error. The pooled
    connection must go back once, or it sits in the pool twice and two later
    callers share it (and read each other's replies)."""
    store = queue_store()
    key = "fq:{t}:z"
    # The server that holds the key (on a cluster: its node), and its pool.
    server = store.r
    if isinstance(server, redis.RedisCluster):
        server = server.get_node_from_key(key).redis_connection
    pool = server.connection_pool
    senders: list[PipelinedSender] = []

    class Watched(PipelinedSender):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            senders.append(self)

    monkeypatch.setattr(store_module, "PipelinedSender", Watched)

    def batch(n: int):
        return ((f"m-{n}-{i:05d}", i) for i in range(REBUILD_BATCH))

    def rows():
        yield from batch(0)
        [sender] = senders
        _wait_for(lambda: sender.sent == 1, "the first batch was never written")
        host, port = sender.conn._sock.getsockname()[:2]
        assert server.client_kill(f"{host}:{port}") is True
        for n in range(1, 50):  # written into a closed socket until it fails
            yield from batch(n)
            _wait_for(lambda n=n: sender.error is not None or sender.sent > n, "no write ended")
            if sender.error is not None:
                break
        assert sender.error is not None, "writes into the dropped connection kept succeeding"
        yield from batch(99)  # its put meets the writer's error

    # Another request holds a connection meanwhile (a busy process): the
    # pool then has room for a connection given back twice.
    busy = pool.get_connection()
    try:
        with pytest.raises(RedisUnavailable):
            store.add_many(key=key, members=rows())
        idle = [conn for conn in pool.pool.queue if conn is not None]
        assert len(idle) == len({id(conn) for conn in idle})
        first, second = pool.get_connection(), pool.get_connection()
        assert first is not second
        pool.release(first)
        pool.release(second)
    finally:
        pool.release(busy)

    def echo(n: int) -> list[str]:
        return [server.echo(f"{n}-{i}") for i in range(200)]

    replies = race(echo, list(range(8)), threads=8)
    assert replies == [[f"{n}-{i}" for i in range(200)] for n in range(8)]


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
