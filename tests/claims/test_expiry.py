"""claims_expire: only unpaid, expired CLAIMED claims are released; a claim
with a payment in flight is left to the payments app
(tests/payments/test_paying_expiry.py)."""

from __future__ import annotations

import pytest

from claims import tasks
from claims.models import Claim
from claims.services import claims_expire
from events.models import Event
from fairqueue.locks import task_lock
from inventory.models import Ticket
from tests.support.sales import claims_for, counter, expire, on_sale, pay, status_of

pytestmark = pytest.mark.django_db


def test_expiry_releases_only_unpaid_expired_claims(run_on_commit):
    tier = on_sale(tickets=10)
    unpaid, fresh, paying, paid = claims_for(tier, 4)
    expire(unpaid, paying, paid)
    pay(paying, "PENDING")
    Claim.objects.filter(pk=paid.pk).update(status="CONFIRMED")
    assert counter(tier) == 6

    report = run_on_commit(claims_expire)

    assert report.released == 1
    released = Claim.objects.get(pk=unpaid.pk)
    assert (released.status, released.release_reason) == ("RELEASED", "expired")
    assert Ticket.objects.filter(claim=unpaid).count() == 0
    assert [status_of(c) for c in (fresh, paying, paid)] == ["CLAIMED", "CLAIMED", "CONFIRMED"]
    assert Ticket.objects.filter(claim__in=[fresh, paying, paid]).count() == 3
    assert counter(tier) == 7


def test_expiry_works_through_batches(run_on_commit):
    tier = on_sale(tickets=10)
    made = claims_for(tier, 5)
    expire(*made)
    report = run_on_commit(claims_expire, batch_size=2)
    assert report.released == 5
    assert Claim.objects.filter(status="RELEASED").count() == 5
    assert Ticket.objects.filter(claim__isnull=False).count() == 0
    assert counter(tier) == 10


def test_expiring_the_last_claims_puts_a_sold_out_event_back_on_sale(run_on_commit):
    tier = on_sale(tickets=2)
    made = claims_for(tier, 2)
    assert Event.objects.get(pk=tier.event_id).status == "SOLD_OUT"
    expire(made[0])
    run_on_commit(claims_expire)
    assert Event.objects.get(pk=tier.event_id).status == "ACTIVE"
    assert counter(tier) == 1


def test_the_task_is_single_flight(run_on_commit):
    tier = on_sale(tickets=10)
    (claim,) = claims_for(tier, 1)
    expire(claim)
    with task_lock("claims_expire", ttl_s=10) as held:
        assert held is not None
        assert run_on_commit(tasks.claims_expire) == {"skipped": "another run holds the lock"}
    assert status_of(claim) == "CLAIMED"
    result = run_on_commit(tasks.claims_expire)
    assert result["released"] == 1
    assert status_of(claim) == "RELEASED"
