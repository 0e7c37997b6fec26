"""claim_confirm and claim_reinstate: what a payment does to its claim."""

from __future__ import annotations

import pytest
from django.db import transaction

from claims.domain import ReleaseReason
from claims.models import Claim
from claims.services import claim_confirm, claim_reinstate, claim_release
from events.models import Event
from fairqueue.errors import InvalidTransition
from inventory.models import Ticket
from tests.support.sales import admit_directly, claim_one, counter, make_customers, on_sale

pytestmark = pytest.mark.django_db


def test_confirm_moves_claimed_to_confirmed_and_keeps_the_tickets():
    tier = on_sale(tickets=2)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    held = claim_one(tier, buyer)
    confirmed = claim_confirm(claim_id=held.pk)
    assert confirmed.status == "CONFIRMED"
    assert confirmed.confirmed_at is not None
    assert Ticket.objects.filter(claim=held).count() == 1


def test_confirm_of_a_released_claim_is_refused(django_capture_on_commit_callbacks):
    tier = on_sale(tickets=2)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    held = claim_one(tier, buyer)
    with django_capture_on_commit_callbacks(execute=True):
        claim_release(claim_id=held.pk, reason=ReleaseReason.EXPIRED)
    with pytest.raises(InvalidTransition) as exc:
        claim_confirm(claim_id=held.pk)
    assert exc.value.details == {"from": "RELEASED", "to": "CONFIRMED"}
    assert Claim.objects.get(pk=held.pk).confirmed_at is None


def test_reinstate_takes_free_tickets_again(django_capture_on_commit_callbacks):
    tier = on_sale(tickets=1)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    held = claim_one(tier, buyer)
    with django_capture_on_commit_callbacks(execute=True):
        claim_release(claim_id=held.pk, reason=ReleaseReason.EXPIRED)
    assert counter(tier) == 1
    with django_capture_on_commit_callbacks(execute=True):
        assert claim_reinstate(claim_id=held.pk) is True
    again = Claim.objects.get(pk=held.pk)
    assert again.status == "CONFIRMED"
    assert Ticket.objects.filter(claim=held).count() == 1
    assert counter(tier) == 0  # brought down to truth after commit
    assert Event.objects.get(pk=tier.event_id).status == "SOLD_OUT"


def test_reinstate_refuses_when_the_tickets_are_gone(django_capture_on_commit_callbacks):
    tier = on_sale(tickets=1)
    first, second = admit_directly(tier.event, make_customers(2))
    held = claim_one(tier, first)
    with django_capture_on_commit_callbacks(execute=True):
        claim_release(claim_id=held.pk, reason=ReleaseReason.EXPIRED)
    taken = claim_one(tier, second)
    with transaction.atomic():  # as inside the payments transaction
        assert claim_reinstate(claim_id=held.pk) is False
        # The caller's transaction is still usable after the refusal.
        assert Claim.objects.filter(pk=held.pk).exists()
    assert Claim.objects.get(pk=held.pk).status == "RELEASED"
    assert list(Ticket.objects.filter(tier=tier).values_list("claim_id", flat=True)) == [taken.pk]


def test_reinstate_refuses_a_second_purchase_by_the_same_customer(
    django_capture_on_commit_callbacks,
):
    tier = on_sale(tickets=5)
    customer = make_customers(1)[0]
    (first,) = admit_directly(tier.event, [customer])
    held = claim_one(tier, first)
    with django_capture_on_commit_callbacks(execute=True):
        claim_release(claim_id=held.pk, reason=ReleaseReason.EXPIRED)
    (second,) = admit_directly(tier.event, [customer])
    bought_again = claim_one(tier, second)
    with transaction.atomic():
        assert claim_reinstate(claim_id=held.pk) is False
    assert Claim.objects.get(pk=held.pk).status == "RELEASED"
    assert Ticket.objects.filter(claim=held).count() == 0
    assert Claim.objects.get(pk=bought_again.pk).status == "CLAIMED"


def test_reinstate_of_a_confirmed_or_claimed_claim_ends_confirmed():
    tier = on_sale(tickets=5)
    first, second = admit_directly(tier.event, make_customers(2))
    held = claim_one(tier, first)
    assert claim_reinstate(claim_id=held.pk) is True  # CLAIMED -> CONFIRMED
    assert Claim.objects.get(pk=held.pk).status == "CONFIRMED"
    assert claim_reinstate(claim_id=held.pk) is True  # a repeated success
    assert Ticket.objects.filter(claim=held).count() == 1
    other = claim_one(tier, second)
    assert Ticket.objects.filter(claim=other).count() == 1
