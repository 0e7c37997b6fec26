"""Fixtures of the waiting-room tests: events on sale, customers, and a way to
put someone in the queue or admit them without going through the API."""

from __future__ import annotations

from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from queueing import services, store
from queueing.models import QueueEntry
from queueing.selectors import event_snapshot_forget
from queueing.store import QueueStore
from tests.factories import CustomerFactory, EventFactory, TierFactory


@pytest.fixture(autouse=True)
def _fresh_event_cache(settings):
    """The per-process event cache must not carry one test's event state into
    the next; tests that change an event's status see it at once."""
    settings.QUEUE_EVENT_CACHE_SECONDS = 0
    event_snapshot_forget()
    yield
    event_snapshot_forget()


@pytest.fixture
def dead_redis(monkeypatch):
    """Redis is down for the queue: its store talks to a port where nothing
    listens (a real client failing for real, not a mock)."""
    dead = redis.Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.2)
    monkeypatch.setattr(store, "_store", QueueStore(client=dead))


@pytest.fixture
def event():
    """An ACTIVE event on sale with one tier of 10 tickets."""
    tier = TierFactory(inventory=10)
    return tier.event


def make_event(*, tickets: int = 10, **fields):
    event = EventFactory(**fields)
    TierFactory(event=event, inventory=tickets)
    return event


def join(event, customer=None) -> tuple:
    customer = customer or CustomerFactory()
    result = services.queue_join(event_id=event.id, customer_id=customer.id)
    return customer, result


def admit(event, customer=None, *, window_seconds: int | None = None) -> tuple:
    """Join and run a tick so that this customer is admitted (the only one
    waiting). Returns (customer, entry, admission token)."""
    if window_seconds is not None:
        type(event).objects.filter(pk=event.pk).update(admission_window_seconds=window_seconds)
    customer, _ = join(event, customer)
    report = services.admission_tick_event(event_id=event.id)
    assert report.admitted >= 1, report
    entry = QueueEntry.objects.get(event=event, customer=customer, status="ADMITTED")
    position = services.queue_position(event_id=event.id, customer_id=customer.id)
    return customer, entry, position.admission_token


def past(seconds: int = 1):
    return timezone.now() - timedelta(seconds=seconds)
