"""Fixtures of the claims tests: events on sale and admitted customers made
directly (Postgres row ADMITTED, signed admission token, Redis admitted set,
as the admission tick leaves them), without running the waiting room."""

from __future__ import annotations

import queue
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from claims.models import Claim
from claims.selectors import tier_snapshot_forget
from claims.services import claim_create
from customers.models import Customer
from events.models import Event, TicketTier
from inventory.services import inventory_sync_event
from inventory.store import inventory_store
from payments.models import Payment
from queueing.domain import QueueStatus
from queueing.models import QueueEntry
from queueing.store import queue_store
from queueing.tokens import admission_token_issue
from tests.factories import CustomerFactory, EventFactory, TierFactory


@dataclass(frozen=True)
class Admitted:
    customer: Customer
    entry: QueueEntry
    token: str


def admit_directly(
    event: Event, customers: Iterable[Customer], *, window_seconds: int = 300
) -> list[Admitted]:
    """Entries ADMITTED in Postgres, tokens minted, members of the Redis
    admitted set with the admission expiry (ms) as score."""
    expires_at = timezone.now() + timedelta(seconds=window_seconds)
    customers = list(customers)
    entries = QueueEntry.objects.bulk_create(
        [
            QueueEntry(
                event=event,
                customer=customer,
                status=QueueStatus.ADMITTED,
                score=n,
                admitted_at=timezone.now(),
                admission_expires_at=expires_at,
            )
            for n, customer in enumerate(customers)
        ]
    )
    store = queue_store()
    expires_ms = int(expires_at.timestamp() * 1000)
    store.add_many(
        key=store.admitted_key(event.id), members=[(str(c.id), expires_ms) for c in customers]
    )
    return [
        Admitted(
            customer=customer,
            entry=entry,
            token=admission_token_issue(
                event_id=event.id,
                customer_id=customer.id,
                queue_entry_id=entry.id,
                expires_at=expires_at,
            ),
        )
        for customer, entry in zip(customers, entries, strict=True)
    ]


def make_customers(n: int) -> list[Customer]:
    tag = uuid.uuid4().hex[:8]
    return Customer.objects.bulk_create(
        [Customer(email=f"buyer{i}-{tag}@example.test") for i in range(n)]
    )


def on_sale(*, tickets: int = 10, price: int = 500_000, **event_fields: Any) -> TicketTier:
    """An ACTIVE event with one tier, its Redis counter synced as
    event_activate leaves it."""
    event = EventFactory(**event_fields)
    tier = TierFactory(event=event, inventory=tickets, price=price)
    inventory_sync_event(event_id=event.id)
    return tier


def claim_one(tier: TicketTier, admitted: Admitted) -> Claim:
    """One ticket of ``tier`` for an admitted customer, through the service."""
    return claim_create(
        event_id=tier.event_id,
        customer_id=admitted.customer.id,
        admission_token=admitted.token,
        tier_id=tier.id,
        quantity=1,
    )


def counter(tier: TicketTier) -> int | None:
    return inventory_store().available(event_id=tier.event_id, tier_ids=[tier.id])[str(tier.id)]


def in_flight(tier: TicketTier) -> list[str]:
    return inventory_store().inflight(event_id=tier.event_id, tier_id=tier.id)


def race(fn: Callable[[Any], Any], items: list[Any], *, threads: int = 32) -> list[Any]:
    """Run ``fn(item)`` for every item on real threads that all start at
    once. Returns each result or the exception it raised, in item order.
    Each thread closes its own database connection when it is done."""
    results: list[Any] = [None] * len(items)
    work: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in range(len(items)):
        work.put(index)
    count = min(threads, len(items))
    barrier = threading.Barrier(count)

    def worker() -> None:
        try:
            barrier.wait(timeout=30)
            while True:
                try:
                    index = work.get_nowait()
                except queue.Empty:
                    return
                try:
                    results[index] = fn(items[index])
                except Exception as exc:
                    results[index] = exc
        finally:
            connection.close()

    pool = [threading.Thread(target=worker) for _ in range(count)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return results


@pytest.fixture(autouse=True)
def _fresh_tier_cache(settings):
    """Tests change events between claims and must see it at once."""
    settings.CLAIMS_TIER_CACHE_SECONDS = 0
    tier_snapshot_forget()
    yield
    tier_snapshot_forget()


@pytest.fixture
def tier() -> TicketTier:
    return on_sale(tickets=10)


@pytest.fixture
def buyer(tier: TicketTier) -> Admitted:
    return admit_directly(tier.event, [CustomerFactory()])[0]


def claims_for(tier, n: int) -> list[Claim]:
    return [
        claim_create(
            event_id=tier.event_id,
            customer_id=a.customer.id,
            admission_token=a.token,
            tier_id=tier.id,
            quantity=1,
        )
        for a in admit_directly(tier.event, make_customers(n))
    ]


def expire(*claims: Claim) -> None:
    Claim.objects.filter(pk__in=[c.pk for c in claims]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )


def pay(claim: Claim, status: str = "PENDING") -> Payment:
    """A live payment for the claim, as payment_open leaves it."""
    Claim.objects.filter(pk=claim.pk).update(payment_in_flight=True)
    return Payment.objects.create(
        claim=claim,
        customer_id=claim.customer_id,
        reference=f"fq_{uuid.uuid4().hex}",
        email="buyer@example.test",
        amount=claim.amount,
        currency=claim.currency,
        status=status,
        next_check_at=timezone.now() + timedelta(minutes=5),
    )


def status_of(claim: Claim) -> str:
    return Claim.objects.get(pk=claim.pk).status
