"""The Redis counter saying "not enough" is not a final 410 while Postgres
has a free ticket."""

from __future__ import annotations

import pytest

from claims.models import Claim
from fairqueue.errors import AppError
from fairqueue.redis import get_redis
from inventory.models import Ticket
from inventory.store import inventory_store
from tests.support.sales import admit_directly, claim_one, counter, make_customers, on_sale

pytestmark = pytest.mark.django_db(transaction=True)


def set_counter(tier, value: int) -> None:
    get_redis().set(inventory_store().counter_key(tier.event_id, tier.id), value)


def test_a_counter_lower_than_truth_does_not_turn_a_customer_away():
    tier = on_sale(tickets=2)
    first, second = admit_directly(tier.event, make_customers(2))
    claim_one(tier, first)
    set_counter(tier, 0)  # a give-back was lost: Redis says none left, Postgres has one
    claim = claim_one(tier, second)
    assert claim.status == "CLAIMED"
    assert Ticket.objects.filter(tier=tier, claim__isnull=True).count() == 0
    assert counter(tier) == 0  # healed to truth on the way


def test_a_truly_sold_out_tier_still_answers_410_and_writes_nothing():
    tier = on_sale(tickets=1)
    first, second = admit_directly(tier.event, make_customers(2))
    claim_one(tier, first)
    with pytest.raises(AppError) as refused:
        claim_one(tier, second)
    assert (refused.value.status, refused.value.code) == (410, "sold_out")
    assert Claim.objects.filter(tier=tier).count() == 1
    assert Claim.objects.filter(customer=second.customer).count() == 0
    assert counter(tier) == 0
