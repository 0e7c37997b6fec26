"""A general admission tier turned into reserved seating while a claim
process still has it cached as general admission (the tier snapshot lives
``events.selectors.TIER_CACHE_SECONDS``): the claim goes the general admission way,
and the one statement of that way must still refuse the tier's seats, a
blocked one above all, whatever the cache said. Once the cache has the
tier as reserved, the claim takes seats the seating way."""

from __future__ import annotations

import pytest

import events.selectors
from claims.models import Claim
from events.models import TierKind
from events.selectors import tier_snapshot, tier_snapshot_forget
from events.services import seat_map_generate, seats_block
from fairqueue.errors import AppError
from inventory.models import Ticket
from tests.support.races import rows_locked
from tests.support.sales import admit_directly, claim_one, counter, make_customers, on_sale

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def cached_general(monkeypatch):
    """A general tier of 4 tickets, cached as such by this process, then
    turned into one row of 4 seats, A-1 to A-3 blocked (house seats)."""
    monkeypatch.setattr(events.selectors, "TIER_CACHE_SECONDS", 600)
    tier = on_sale(tickets=4)
    assert tier_snapshot(tier_id=tier.id).kind == TierKind.GENERAL
    seat_map_generate(tier_id=tier.id, first_row="A", last_row="A", seats_per_row=4)
    seats_block(tier_id=tier.id, labels=["A-1", "A-2", "A-3"])
    assert counter(tier) == 1  # A-4, as the organizer's changes left the counter
    assert tier_snapshot(tier_id=tier.id).kind == TierKind.GENERAL  # still, for a while
    return tier


def blocked_seats_held(tier) -> int:
    return Ticket.objects.filter(tier=tier, blocked=True, claim__isnull=False).count()


def test_a_blocked_seat_is_never_sold_through_a_stale_cache(cached_general):
    tier = cached_general
    buyer = admit_directly(tier.event, make_customers(1))[0]
    in_flight_on_a4 = rows_locked(Ticket.objects.filter(tier=tier, label="A-4"))
    with in_flight_on_a4, pytest.raises(AppError) as refused:
        claim_one(tier, buyer)

    assert refused.value.code == "busy"  # A-4 may come back: retry
    assert blocked_seats_held(tier) == 0
    assert Claim.objects.filter(customer=buyer.customer).count() == 0
    assert counter(tier) == 1  # the reservation was given back


def test_a_free_seat_is_not_sold_the_general_way_either(cached_general):
    tier = cached_general
    buyer = admit_directly(tier.event, make_customers(1))[0]

    with pytest.raises(AppError) as refused:
        claim_one(tier, buyer)

    assert refused.value.code == "busy"
    assert Ticket.objects.filter(tier=tier, claim__isnull=False).count() == 0
    assert Claim.objects.filter(customer=buyer.customer).count() == 0
    # The retry, once the cache knows the tier: the free seat, named on the claim.
    tier_snapshot_forget()
    claim = claim_one(tier, buyer)
    assert claim.seats == ["A-4"]
    assert list(Ticket.objects.filter(claim=claim).values_list("label", flat=True)) == ["A-4"]
    assert blocked_seats_held(tier) == 0
