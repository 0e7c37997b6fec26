"""One Redis-failure rule (fairqueue/redis.py): every store method is either
required (a Redis failure is 503 busy) or best effort (counted, logged at most
once a minute, a neutral answer), so no caller ever sees a RedisError."""

from __future__ import annotations

import inspect
import logging
import re
from pathlib import Path

import pytest
import redis

from customers.revocation import AuthStateStore
from customers.throttling import CustomerBucketStore, RateLimitStore
from fairqueue import redis as rule
from fairqueue.errors import Busy
from fairqueue.redis import RedisStore, RedisUnavailable, best_effort, make_client, required
from inventory.seating.seatmap import SeatMapStore
from inventory.store import InventoryStore, Reservation
from queueing.store import QueueStore
from queueing.ws_tickets import WsTicketStore

REPO = Path(__file__).resolve().parents[2]
# The rule itself.
OUTSIDE_THE_RULE = {"fairqueue/redis.py"}
STORES = (
    QueueStore,
    InventoryStore,
    AuthStateStore,
    RateLimitStore,
    CustomerBucketStore,
    WsTicketStore,
    SeatMapStore,
)
# Code naming the exception (a docstring may mention it).
CATCHING = re.compile(r"except[^:\n]*RedisError|redis\.(exceptions\.)?RedisError")


def public_methods(store: type) -> list[tuple[str, object]]:
    return [
        (name, member)
        for name, member in vars(store).items()
        if not name.startswith("_")
        and inspect.isfunction(member)
        and not name.endswith("_key")
        and name not in {"scan_members"}  # a generator over scan_chunk (required)
    ]


@pytest.fixture
def dead(closed_port) -> redis.Redis:
    return make_client(f"redis://127.0.0.1:{closed_port}/0")


def test_every_store_method_says_what_a_redis_failure_means():
    assert set(STORES) == set(RedisStore.__subclasses__())  # a new store is listed here
    for store in STORES:
        for name, method in public_methods(store):
            kind = getattr(method, "redis_failure", None)
            assert kind in ("required", "best_effort"), f"{store.__name__}.{name}"


def test_no_app_code_catches_redis_errors_itself():
    offenders = []
    for path in REPO.glob("*/**/*.py"):
        relative = path.relative_to(REPO).as_posix()
        if relative.split("/")[0] in {".venv", "tests", "bench", "build"}:
            continue
        if relative in OUTSIDE_THE_RULE:
            continue
        if CATCHING.search(path.read_text()):
            offenders.append(relative)
    assert offenders == []


def test_best_effort_methods_answer_their_neutral_value_with_redis_down(dead):
    queue, inventory = QueueStore(client=dead), InventoryStore(client=dead)
    assert queue.ping() is False
    assert queue.join(event_id="e", customer_id="c", score=1) is None
    assert queue.position(event_id="e", customer_id="c") is None
    assert queue.admitted_until_ms(event_id="e", customer_id="c") is None
    assert queue.sizes(event_id="e") is None
    assert queue.drop_event(event_id="e") is None
    assert inventory.reserve(event_id="e", tier_id="t", quantity=1) is None
    assert inventory.give_back(event_id="e", tier_id="t", quantity=1) is None
    assert inventory.returned(event_id="e") is None
    assert inventory.available(event_id="e", tier_ids=["t"]) is None
    assert inventory.finish(Reservation("e", "t", 1, "r"), give_back=True) is None


def test_required_methods_are_503_busy_with_redis_down(dead):
    queue = QueueStore(client=dead)
    with pytest.raises(RedisUnavailable) as refused:
        queue.add_many(key="fq:{e}:queue:waiting", members=[("c", 1)])
    assert isinstance(refused.value, Busy)
    assert (refused.value.status, refused.value.code, refused.value.retry_after) == (503, "busy", 1)
    with pytest.raises(RedisUnavailable):
        queue.size(key="fq:{e}:queue:waiting")


def test_failures_are_counted_every_time_and_logged_once_a_minute(monkeypatch, caplog):
    monkeypatch.setattr(rule, "_last_logged", {})
    heard: list[str] = []
    monkeypatch.setattr(rule, "_failure_listeners", [heard.append])
    before = rule.redis_failures()

    @best_effort("neutral")
    def flaky() -> str:
        raise redis.ConnectionError("down")

    with caplog.at_level(logging.WARNING, logger="fairqueue.redis"):
        answers = [flaky() for _ in range(5)]
    assert answers == ["neutral"] * 5
    assert rule.redis_failures() - before == 5
    assert len(heard) == 5 and set(heard) == {flaky.__wrapped__.__qualname__}
    assert sum("redis unavailable" in r.getMessage() for r in caplog.records) == 1


def test_a_required_method_that_works_is_untouched():
    @required
    def fine() -> int:
        return 7

    assert fine() == 7
