"""A claim's Postgres side is one statement: admission check, ticket rows,
queue entry COMPLETED and the claim row, all or nothing (no BEGIN/COMMIT,
no read before it)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import events.selectors
from claims.models import Claim
from events.selectors import tier_snapshot
from inventory.models import Ticket
from queueing.models import QueueEntry
from queueing.store import queue_store
from tests.support.factories import CustomerFactory
from tests.support.sales import admit_directly, claim_one, on_sale

pytestmark = pytest.mark.django_db


@pytest.fixture
def tier(monkeypatch):
    monkeypatch.setattr(events.selectors, "TIER_CACHE_SECONDS", 60)  # as served: cached
    tier = on_sale(tickets=100)  # plenty left: no sold-out check after the claim
    tier_snapshot(tier_id=tier.id)
    return tier


def test_a_claim_is_one_postgres_statement(tier):
    [buyer] = admit_directly(tier.event, [CustomerFactory()])
    assert queue_store().admitted_until_ms(event_id=tier.event_id, customer_id=buyer.customer.id)
    with CaptureQueriesContext(connection) as queries:
        claim = claim_one(tier, buyer)
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["WITH"], [
        q["sql"][:80] for q in queries.captured_queries
    ]
    assert Claim.objects.filter(pk=claim.pk, customer=buyer.customer).count() == 1
    assert Ticket.objects.filter(claim_id=claim.pk).count() == 1
    assert QueueEntry.objects.get(pk=buyer.entry.pk).status == "COMPLETED"
    # The round trip that finished the reservation also left the admitted set.
    slot = queue_store().admitted_until_ms(event_id=tier.event_id, customer_id=buyer.customer.id)
    assert slot is None


def test_an_expired_admission_takes_no_ticket_and_writes_nothing(tier):
    [buyer] = admit_directly(tier.event, [CustomerFactory()], window_seconds=-5)
    with pytest.raises(Exception) as refused:
        claim_one(tier, buyer)
    assert getattr(refused.value, "code", None) == "admission_expired"
    assert Claim.objects.count() == 0
    assert Ticket.objects.filter(claim_id__isnull=False).count() == 0
    assert QueueEntry.objects.get(pk=buyer.entry.pk).status == "ADMITTED"
