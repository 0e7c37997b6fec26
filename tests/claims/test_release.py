"""claim_release: tickets return to sale (invariant 4)."""

from __future__ import annotations

import pytest

from claims.domain import ReleaseReason
from claims.models import Claim
from claims.services import claim_create, claim_release
from events.models import Event
from fairqueue.errors import InvalidTransition, NotFound
from inventory.models import Ticket
from queueing.services.waitlist import waitlist_place
from queueing.services.waitlist_offers import waitlist_tick_event
from tests.support.factories import CustomerFactory
from tests.support.sales import admit_directly, counter, make_customers, on_sale

pytestmark = pytest.mark.django_db


def claim_one(tier, admitted, quantity=1):
    return claim_create(
        event_id=tier.event_id,
        customer_id=admitted.customer.id,
        admission_token=admitted.token,
        tier_id=tier.id,
        quantity=quantity,
    )


def test_release_then_another_customer_claims_the_ticket(django_capture_on_commit_callbacks):
    """The customer refused as sold out is first on the waiting list: the
    released ticket is offered to them, and they claim it with the offer."""
    tier = on_sale(tickets=1)
    first, second = admit_directly(tier.event, make_customers(2))
    held = claim_one(tier, first)
    with pytest.raises(Exception) as refused:
        claim_one(tier, second)
    assert refused.value.code == "sold_out"

    with django_capture_on_commit_callbacks(execute=True):
        released = claim_release(
            claim_id=held.pk, reason=ReleaseReason.CUSTOMER, customer_id=first.customer.id
        )
    assert released.status == "RELEASED"
    assert released.released_at is not None
    assert counter(tier) == 1

    assert waitlist_tick_event(event_id=tier.event_id).offered == [str(second.customer.id)]
    offer = waitlist_place(event_id=tier.event_id, customer_id=second.customer.id)
    taken = claim_create(
        event_id=tier.event_id,
        customer_id=second.customer.id,
        admission_token=offer.admission_token,
        tier_id=tier.id,
        quantity=1,
    )
    assert taken.status == "CLAIMED"
    assert list(Ticket.objects.filter(tier=tier).values_list("claim_id", flat=True)) == [taken.pk]


def test_sold_out_then_release_puts_the_event_back_on_sale(django_capture_on_commit_callbacks):
    tier = on_sale(tickets=2)
    made = [claim_one(tier, a) for a in admit_directly(tier.event, make_customers(2))]
    assert Event.objects.get(pk=tier.event_id).status == "SOLD_OUT"
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        claim_release(claim_id=made[0].pk, reason=ReleaseReason.PAYMENT_FAILED)
    assert len(callbacks) >= 1
    assert Event.objects.get(pk=tier.event_id).status == "ACTIVE"
    assert counter(tier) == 1
    assert Claim.objects.get(pk=made[0].pk).release_reason == "payment_failed"


def test_a_multi_ticket_claim_returns_all_its_tickets(django_capture_on_commit_callbacks):
    tier = on_sale(tickets=5)
    Event.objects.filter(pk=tier.event_id).update(max_tickets_per_customer=3)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    held = claim_one(tier, buyer, quantity=3)
    assert counter(tier) == 2
    with django_capture_on_commit_callbacks(execute=True):
        claim_release(claim_id=held.pk, reason=ReleaseReason.STAFF)
    assert Ticket.objects.filter(tier=tier, claim__isnull=True).count() == 5
    assert counter(tier) == 5


def test_releasing_twice_is_refused_and_gives_nothing_back_twice(
    django_capture_on_commit_callbacks,
):
    tier = on_sale(tickets=3)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    held = claim_one(tier, buyer)
    with django_capture_on_commit_callbacks(execute=True):
        claim_release(claim_id=held.pk, reason=ReleaseReason.CUSTOMER)
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(InvalidTransition) as exc,
    ):
        claim_release(claim_id=held.pk, reason=ReleaseReason.CUSTOMER)
    assert exc.value.details == {"from": "RELEASED", "to": "RELEASED"}
    assert callbacks == []
    assert counter(tier) == 3


def test_release_of_someone_elses_claim_is_not_found():
    tier = on_sale(tickets=3)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    held = claim_one(tier, buyer)
    with pytest.raises(NotFound):
        claim_release(
            claim_id=held.pk, reason=ReleaseReason.CUSTOMER, customer_id=CustomerFactory().id
        )
    assert Claim.objects.get(pk=held.pk).status == "CLAIMED"
    assert Ticket.objects.filter(claim=held).count() == 1


def test_a_customer_cannot_release_a_paid_claim(django_capture_on_commit_callbacks):
    tier = on_sale(tickets=2)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    held = claim_one(tier, buyer)
    Claim.objects.filter(pk=held.pk).update(status="CONFIRMED")
    with pytest.raises(InvalidTransition), django_capture_on_commit_callbacks(execute=True):
        claim_release(
            claim_id=held.pk, reason=ReleaseReason.CUSTOMER, customer_id=buyer.customer.id
        )
    assert Claim.objects.get(pk=held.pk).status == "CONFIRMED"
    assert Ticket.objects.filter(claim=held).count() == 1
    assert counter(tier) == 1


def test_a_refunded_paid_claim_returns_its_tickets_and_reopens_a_sold_out_event(
    django_capture_on_commit_callbacks,
):
    tier = on_sale(tickets=2)
    Event.objects.filter(pk=tier.event_id).update(max_tickets_per_customer=2)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    held = claim_one(tier, buyer, quantity=2)
    Claim.objects.filter(pk=held.pk).update(status="CONFIRMED")
    assert Event.objects.get(pk=tier.event_id).status == "SOLD_OUT"
    assert counter(tier) == 0

    with django_capture_on_commit_callbacks(execute=True):
        released = claim_release(claim_id=held.pk, reason=ReleaseReason.REFUNDED)

    assert (released.status, released.release_reason) == ("RELEASED", "refunded")
    assert released.released_at is not None
    assert Ticket.objects.filter(tier=tier, claim__isnull=True).count() == 2
    assert counter(tier) == 2
    assert Event.objects.get(pk=tier.event_id).status == "ACTIVE"
