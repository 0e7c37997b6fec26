"""Queue reconciliation tells routine from real trouble: sets restored after
a Redis wipe are INFO and counted as ``queue_rebuilt``; members lost from or
left stale in a set that existed are a WARNING and ``queue_divergence``; a
full pass over agreeing sets logs and counts nothing."""

from __future__ import annotations

import logging

import pytest

from queueing import services
from queueing.store import queue_store
from tests.support.metrics import heals
from tests.support.sales import join, make_event

pytestmark = pytest.mark.django_db

LOGGER = "queueing.services.reconcile"


@pytest.fixture
def line():
    """Eight waiting, two admitted."""
    event = make_event(tickets=2)
    for _ in range(10):
        join(event)
    services.admission_tick_event(event_id=event.id)
    return event


def counts() -> tuple[float, float]:
    return heals("queue_rebuilt"), heals("queue_divergence")


def test_a_wiped_queue_restored_is_routine(line, redis_clean, caplog):
    redis_clean.flushdb()
    rebuilt, diverged = counts()

    with caplog.at_level(logging.INFO, logger=LOGGER):
        services.queue_reconcile_event(event_id=line.id, full=False)

    assert counts() == (rebuilt + 10, diverged)
    [record] = [r for r in caplog.records if r.name == LOGGER]
    assert record.levelname == "INFO"
    assert record.getMessage().startswith(f"queue rebuilt event={line.id}")


def test_lost_and_stale_members_are_divergence(line, caplog):
    store = queue_store()
    lost = store.r.zrange(store.waiting_key(line.id), 0, 1)
    store.r.zrem(store.waiting_key(line.id), *lost)
    store.r.zadd(store.waiting_key(line.id), {"ghost-who-left": 1})
    rebuilt, diverged = counts()

    with caplog.at_level(logging.INFO, logger=LOGGER):
        services.queue_reconcile_event(event_id=line.id, full=True)

    assert counts() == (rebuilt, diverged + 3)  # two re-added, one dropped
    [record] = [r for r in caplog.records if r.name == LOGGER]
    assert record.levelname == "WARNING"
    assert "queue divergence healed" in record.getMessage()


def test_a_full_pass_over_agreeing_sets_is_silent(line, caplog):
    before = counts()

    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        report = services.queue_reconcile_event(event_id=line.id, full=True)

    assert report == {"waiting_added": 8, "admitted_added": 2, "dropped": 0}  # re-sent, no-ops
    assert counts() == before
    assert [r for r in caplog.records if r.name == LOGGER] == []


def test_a_rebuild_after_a_wipe_is_routine(line, redis_clean, caplog):
    redis_clean.flushdb()
    rebuilt, diverged = counts()

    with caplog.at_level(logging.INFO, logger="queueing.services.rebuild"):
        services.queue_rebuild(event_id=line.id)

    assert counts() == (rebuilt + 10, diverged)
    [record] = [r for r in caplog.records if r.name == "queueing.services.rebuild"]
    assert record.levelname == "INFO"


def test_a_rebuild_of_a_short_set_is_divergence(line, caplog):
    store = queue_store()
    store.r.zpopmin(store.waiting_key(line.id), 3)
    rebuilt, diverged = counts()

    with caplog.at_level(logging.INFO, logger="queueing.services.rebuild"):
        services.queue_rebuild(event_id=line.id)

    assert counts() == (rebuilt, diverged + 3)
    [record] = [r for r in caplog.records if r.name == "queueing.services.rebuild"]
    assert record.levelname == "WARNING"
