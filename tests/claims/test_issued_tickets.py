"""Issued tickets: one per seat when a claim becomes CONFIRMED, voided when
it leaves CONFIRMED (a refund, staff), never issued twice."""

from __future__ import annotations

import pytest

from claims.domain import CODE_ALPHABET, ReleaseReason
from claims.models import Claim, IssuedTicket
from claims.services import (
    claim_confirm,
    claim_create,
    claim_reinstate,
    claim_release,
    issued_tickets_issue,
)
from claims.signals import claim_confirmed
from events.models import Event
from fairqueue.errors import InvalidTransition
from inventory.models import Ticket
from tests.support.sales import admit_directly, counter, make_customers, on_sale

pytestmark = pytest.mark.django_db


def claim_of(tier, quantity: int = 1) -> Claim:
    (buyer,) = admit_directly(tier.event, make_customers(1))
    return claim_create(
        event_id=tier.event_id,
        customer_id=buyer.customer.id,
        admission_token=buyer.token,
        tier_id=tier.id,
        quantity=quantity,
    )


def test_a_confirmed_claim_gets_one_ticket_per_seat_with_its_own_code(
    django_capture_on_commit_callbacks,
):
    tier = on_sale(tickets=5)
    Event.objects.filter(pk=tier.event_id).update(max_tickets_per_customer=3)
    claim = claim_of(tier, quantity=3)
    heard = []

    def listen(sender, claim_id, **kwargs):
        heard.append(claim_id)

    claim_confirmed.connect(listen)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            claim_confirm(claim_id=claim.pk)
    finally:
        claim_confirmed.disconnect(listen)

    tickets = list(IssuedTicket.objects.filter(claim=claim).order_by("seat"))
    assert [t.seat for t in tickets] == [1, 2, 3]
    assert {t.status for t in tickets} == {"VALID"}
    assert len({t.code for t in tickets}) == 3
    assert all(len(t.code) == 16 and set(t.code) <= set(CODE_ALPHABET) for t in tickets)
    assert all(str(claim.pk).replace("-", "").upper() not in t.code for t in tickets)
    assert {(t.event_id, t.tier_id, t.customer_id) for t in tickets} == {
        (tier.event_id, tier.id, claim.customer_id)
    }
    assert {t.holder_email for t in tickets} == {claim.customer.email}
    assert heard.count(claim.pk) == 1  # after commit, once


def test_a_repeated_confirmation_issues_nothing_twice():
    tier = on_sale(tickets=5)
    claim = claim_of(tier)
    claim_confirm(claim_id=claim.pk)
    first = list(IssuedTicket.objects.values_list("code", flat=True))

    assert claim_reinstate(claim_id=claim.pk) is True  # a repeated success
    issued = issued_tickets_issue(claim_id=claim.pk)  # and straight through the service

    assert [t.code for t in issued] == first
    assert IssuedTicket.objects.count() == 1


def test_no_ticket_while_a_claim_is_only_held():
    tier = on_sale(tickets=5)
    claim_of(tier)
    assert IssuedTicket.objects.count() == 0


def test_a_late_success_that_reinstates_a_released_claim_issues_its_tickets(
    django_capture_on_commit_callbacks,
):
    tier = on_sale(tickets=5)
    claim = claim_of(tier)
    with django_capture_on_commit_callbacks(execute=True):
        claim_release(claim_id=claim.pk, reason=ReleaseReason.EXPIRED)
    assert IssuedTicket.objects.count() == 0

    assert claim_reinstate(claim_id=claim.pk) is True

    assert IssuedTicket.objects.filter(claim=claim, status="VALID").count() == 1


@pytest.mark.parametrize("reason", [ReleaseReason.REFUNDED, ReleaseReason.STAFF])
def test_a_refund_or_staff_release_voids_the_tickets_and_returns_the_seats(
    reason, django_capture_on_commit_callbacks
):
    tier = on_sale(tickets=5)
    claim = claim_of(tier)
    claim_confirm(claim_id=claim.pk)

    with django_capture_on_commit_callbacks(execute=True):
        released = claim_release(claim_id=claim.pk, reason=reason)

    assert released.status == "RELEASED"
    ticket = IssuedTicket.objects.get(claim=claim)
    assert ticket.status == "VOID"
    assert ticket.voided_at is not None
    assert ticket.void_reason == reason.value
    assert Ticket.objects.filter(claim=claim).count() == 0  # the seat is on sale again
    assert counter(tier) == 5


@pytest.mark.parametrize(
    "reason", [ReleaseReason.CUSTOMER, ReleaseReason.EXPIRED, ReleaseReason.PAYMENT_FAILED]
)
def test_only_a_refund_or_staff_may_release_a_paid_claim(reason):
    tier = on_sale(tickets=5)
    claim = claim_of(tier)
    claim_confirm(claim_id=claim.pk)

    with pytest.raises(InvalidTransition):
        claim_release(claim_id=claim.pk, reason=reason)

    assert Claim.objects.get(pk=claim.pk).status == "CONFIRMED"
    assert IssuedTicket.objects.get(claim=claim).status == "VALID"
    assert Ticket.objects.filter(claim=claim).count() == 1


def test_a_used_ticket_is_voided_by_a_refund_too():
    tier = on_sale(tickets=5)
    claim = claim_of(tier)
    claim_confirm(claim_id=claim.pk)
    IssuedTicket.objects.filter(claim=claim).update(status="USED")

    claim_release(claim_id=claim.pk, reason=ReleaseReason.REFUNDED)

    assert IssuedTicket.objects.get(claim=claim).status == "VOID"
