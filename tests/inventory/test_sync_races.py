"""The inventory sync against a release that lands while it
runs. The sync reads free tickets from Postgres, then writes the counter; a
release whose give-back reaches Redis in between must not be wiped."""

from __future__ import annotations

import threading

import pytest
from django.db import transaction

from claims.domain import ReleaseReason
from claims.services import claim_release, claims_expire
from events.services import inventory_reconcile
from inventory import services as inventory_services
from inventory.models import Ticket
from tests.support.races import Aside, Between
from tests.support.sales import admit_directly, claim_one, counter, expire, make_customers, on_sale

pytestmark = pytest.mark.django_db(transaction=True)


def free_in_postgres(tier) -> int:
    return Ticket.objects.filter(tier=tier, claim__isnull=True).count()


def test_an_expiry_landing_inside_the_inventory_reconcile_is_not_wiped(monkeypatch):
    tier = on_sale(tickets=3)
    first, *others = admit_directly(tier.event, make_customers(3))
    lapsed = claim_one(tier, first)
    for buyer in others:
        claim_one(tier, buyer)
    assert counter(tier) == 0
    expire(lapsed)
    # The reconcile has read "0 free" from Postgres when the expiry (same 30 s
    # period) releases the claim and gives its ticket back to Redis.
    between = Between(monkeypatch, inventory_services, "free_tickets_by_tier", claims_expire)
    inventory_reconcile()
    report = between.finish()
    assert between.state == "done"
    assert report.released == 1
    assert free_in_postgres(tier) == 1
    assert counter(tier) == 1


def test_a_customer_release_landing_inside_a_sync_is_not_wiped(monkeypatch):
    tier = on_sale(tickets=2)
    buyers = admit_directly(tier.event, make_customers(2))
    claims = [claim_one(tier, b) for b in buyers]
    between = Between(
        monkeypatch,
        inventory_services,
        "free_tickets_by_tier",
        lambda: claim_release(claim_id=claims[0].pk, reason=ReleaseReason.CUSTOMER),
    )
    inventory_services.inventory_sync_event(event_id=tier.event_id)
    between.finish()
    assert between.state == "done"
    assert free_in_postgres(tier) == 1
    assert counter(tier) == 1


def test_a_ticket_released_and_taken_again_is_counted_right_by_the_next_sync():
    """A committed reservation stays visible to syncs for a while (the
    recently-committed set); once its claim is released and its row taken by
    another claim, Postgres no longer names it, so the release must drop it
    there, or the sync would subtract it as if still in flight."""
    tier = on_sale(tickets=3)
    first, second, third = admit_directly(tier.event, make_customers(3))
    released = claim_one(tier, first)
    claim_one(tier, second)
    claim_release(claim_id=released.pk, reason=ReleaseReason.CUSTOMER)
    freed_row = Ticket.objects.get(tier=tier, claim__isnull=True, reservation_id__gt="")
    other_free = Ticket.objects.get(tier=tier, claim__isnull=True, reservation_id="")
    # The third claim takes the released row (the other free one is locked).
    locked, go = threading.Event(), threading.Event()

    def hold_other_row() -> None:
        with transaction.atomic():
            Ticket.objects.select_for_update().get(pk=other_free.pk)
            locked.set()
            go.wait(30)

    holder = Aside(hold_other_row)
    assert locked.wait(10)
    try:
        taken = claim_one(tier, third)
    finally:
        go.set()
        holder.finish()
    assert Ticket.objects.get(pk=freed_row.pk).claim_id == taken.pk
    inventory_services.inventory_sync_event(event_id=tier.event_id)
    assert free_in_postgres(tier) == 1
    assert counter(tier) == 1
