"""The per-process snapshot cache of the hot paths (events for the queue,
tiers for claims), read from real rows."""

import time
import uuid

import pytest

import events.selectors
import queueing.selectors
from events.models import Event
from events.selectors import tier_snapshot, tier_snapshot_forget
from fairqueue import snapshots
from queueing.selectors import event_snapshot, event_snapshot_forget
from tests.support.factories import TierFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _empty_caches():
    event_snapshot_forget()
    tier_snapshot_forget()
    yield
    event_snapshot_forget()
    tier_snapshot_forget()


def test_a_tier_is_read_once_per_ttl_then_again(monkeypatch, django_assert_num_queries):
    monkeypatch.setattr(events.selectors, "TIER_CACHE_SECONDS", 0.2)
    tier = TierFactory()
    assert tier_snapshot(tier_id=tier.id).event_status == "ACTIVE"
    Event.objects.filter(pk=tier.event_id).update(status="PAUSED")
    with django_assert_num_queries(0):
        assert tier_snapshot(tier_id=tier.id).event_status == "ACTIVE"
    time.sleep(0.25)
    assert tier_snapshot(tier_id=tier.id).event_status == "PAUSED"


def test_an_unknown_id_is_cached_as_none(monkeypatch, django_assert_num_queries):
    monkeypatch.setattr(queueing.selectors, "EVENT_CACHE_SECONDS", 60)
    unknown = uuid.uuid4()
    assert event_snapshot(event_id=unknown) is None
    with django_assert_num_queries(0):
        assert event_snapshot(event_id=unknown) is None


def test_a_flood_of_ids_empties_the_cache_instead_of_growing_it(monkeypatch):
    monkeypatch.setattr(snapshots, "MAX_ENTRIES", 3)
    cache = snapshots.SnapshotCache(lambda key: key, ttl=lambda: 60)
    for n in range(10):
        cache.get(n)
        assert len(cache._entries) <= 4
    cache.forget(9)
    assert "9" not in cache._entries
