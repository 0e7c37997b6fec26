"""Fixtures of the waiting-room tests (helpers: tests/support/sales.py)."""

from __future__ import annotations

import pytest

import queueing.selectors
from queueing.selectors import event_snapshot_forget
from tests.support.factories import TierFactory


@pytest.fixture(autouse=True)
def _fresh_event_cache(monkeypatch):
    """The per-process event cache must not carry one test's event state into
    the next; tests that change an event's status see it at once."""
    monkeypatch.setattr(queueing.selectors, "EVENT_CACHE_SECONDS", 0)
    event_snapshot_forget()
    yield
    event_snapshot_forget()


@pytest.fixture
def event():
    """An ACTIVE event on sale with one tier of 10 tickets."""
    tier = TierFactory(inventory=10)
    return tier.event
