"""The waiting list under real concurrency (threads, real Postgres and
Redis): concurrent joins make one entry each, two freed tickets make exactly
two offers however their rounds interleave, and an offer whose ticket a late
payment takes back is never lost on either side."""

from __future__ import annotations

import time
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from claims.domain import ClaimStatus, ReleaseReason
from claims.models import Claim
from claims.services import claim_create, claim_release
from console.invariants import waitlist as waitlist_checks
from console.invariants.base import Options
from events.models import Event
from fairqueue.errors import AppError
from inventory.models import Ticket
from queueing.domain import QueueStatus, WaitlistStatus
from queueing.models import QueueEntry, WaitlistEntry, WaitlistState
from queueing.services import waitlist_offers
from queueing.services.waitlist import waitlist_join, waitlist_place
from queueing.services.waitlist_offers import waitlist_tick_event
from tests.support.payments import make_claim, pending_payment, post_webhook, reload
from tests.support.races import race
from tests.support.sales import admit_directly, claim_one, make_customers, on_sale

pytestmark = pytest.mark.django_db(transaction=True)


def sold_out_with_list(tickets: int, waiting: int):
    """A SOLD_OUT event, its claims, and ``waiting`` customers on its list
    (past the first minute: in the order they joined)."""
    tier = on_sale(tickets=tickets)
    claims = [claim_one(tier, a) for a in admit_directly(tier.event, make_customers(tickets))]
    Event.objects.filter(pk=tier.event_id).update(status="SOLD_OUT")
    opened = timezone.now() - timedelta(minutes=2)
    WaitlistState.objects.create(event_id=tier.event_id, opened_at=opened, drawn_at=opened)
    customers = make_customers(waiting)
    for customer in customers:
        waitlist_join(event_id=tier.event_id, customer_id=customer.id)
    return tier, claims, customers


def assert_list_invariants(event_id) -> None:
    event = Event.objects.get(pk=event_id)
    for check in (
        waitlist_checks.offers_within_free_tickets,
        waitlist_checks.waitlist_one_per_customer,
    ):
        result = check(event, Options(now=timezone.now()))
        assert result.ok, result.detail


def offered_to(customers) -> list:
    return [
        c
        for c in customers
        if WaitlistEntry.objects.filter(customer=c, status=WaitlistStatus.OFFERED).exists()
    ]


def outcome(results) -> Counter:
    return Counter(r.code if isinstance(r, AppError) else type(r).__name__ for r in results)


def claim_outcome(tier, customer, token):
    try:
        return claim_create(
            event_id=tier.event_id,
            customer_id=customer.id,
            admission_token=token,
            tier_id=tier.id,
            quantity=1,
        )
    except AppError as exc:
        return exc


def test_concurrent_joins_make_one_entry_each():
    tier, _, _ = sold_out_with_list(tickets=1, waiting=0)
    customers = make_customers(8)
    calls = [c for c in customers for _ in range(3)]
    results = race(lambda c: waitlist_join(event_id=tier.event_id, customer_id=c.id), calls)
    assert outcome(results) == {"WaitlistEntry": 8, "already_on_waitlist": 16}
    for customer in customers:
        assert WaitlistEntry.objects.filter(customer=customer).count() == 1
    assert_list_invariants(tier.event_id)


def test_two_freed_tickets_race_to_exactly_two_offers():
    """Two releases commit at once and each starts an offer round, while more
    rounds run beside them: the event's row lock and the room counted under
    it give exactly two offers, to the first two entries."""
    tier, claims, customers = sold_out_with_list(tickets=3, waiting=4)
    releases = [
        lambda c=c: claim_release(claim_id=c.id, reason=ReleaseReason.EXPIRED) for c in claims[:2]
    ]
    rounds = [lambda: waitlist_tick_event(event_id=tier.event_id) for _ in range(6)]
    race(lambda fn: fn(), releases + rounds)
    waitlist_tick_event(event_id=tier.event_id)  # the round a release's commit starts
    assert offered_to(customers) == customers[:2]
    assert QueueEntry.objects.filter(status=QueueStatus.ADMITTED).count() == 2
    assert_list_invariants(tier.event_id)


def test_without_the_room_rule_racing_rounds_offer_too_many(monkeypatch):
    """The guard shown missing: rounds that do not count the offers already
    standing hand one freed ticket to several entries."""
    tier, claims, customers = sold_out_with_list(tickets=2, waiting=4)
    claim_release(claim_id=claims[0].id, reason=ReleaseReason.EXPIRED)
    real = waitlist_offers.free_tickets_by_tier
    # Each round believes the offers made so far hold nothing.
    monkeypatch.setattr(
        waitlist_offers,
        "free_tickets_by_tier",
        lambda *, event_id: {
            t: n + QueueEntry.objects.filter(offer_tier_id=t, status="ADMITTED").count()
            for t, n in real(event_id=event_id).items()
        },
    )
    for _ in range(3):
        waitlist_tick_event(event_id=tier.event_id)
    assert len(offered_to(customers)) > 1
    result = waitlist_checks.offers_within_free_tickets(
        Event.objects.get(pk=tier.event_id), Options(now=timezone.now())
    )
    assert not result.ok


def test_an_offer_lapsing_while_its_claim_comes_in_gives_the_ticket_once():
    tier, claims, customers = sold_out_with_list(tickets=1, waiting=2)
    first, second = customers
    claim_release(claim_id=claims[0].id, reason=ReleaseReason.EXPIRED)
    waitlist_tick_event(event_id=tier.event_id)
    token = waitlist_place(event_id=tier.event_id, customer_id=first.id).admission_token
    QueueEntry.objects.filter(customer=first, status=QueueStatus.ADMITTED).update(
        admission_expires_at=timezone.now() + timedelta(milliseconds=150)
    )

    def lapse_and_offer():
        time.sleep(0.15)
        return waitlist_tick_event(event_id=tier.event_id)

    race(lambda fn: fn(), [lambda: claim_outcome(tier, first, token), lapse_and_offer])
    waitlist_tick_event(event_id=tier.event_id)
    first_claimed = Claim.objects.filter(customer=first, status=ClaimStatus.CLAIMED).exists()
    second_offered = offered_to([second]) == [second]
    assert first_claimed != second_offered  # the ticket went one way, never both
    assert Ticket.objects.filter(tier=tier, claim__isnull=False).count() == int(first_claimed)
    assert_list_invariants(tier.event_id)


def paid_then_lapsed(api, sandbox):
    """One ticket: the first customer's claim is being paid when it expires,
    and the ticket is offered to the second (on the list). Returns the tier,
    the customers, the claim, its payment, the webhook and the offer's token."""
    tier = on_sale(tickets=1)
    first, second = make_customers(2)
    paid = make_claim(tier=tier, customer=first)
    payment = pending_payment(api, paid)
    Event.objects.filter(pk=tier.event_id).update(status="SOLD_OUT")
    opened = timezone.now() - timedelta(minutes=2)
    WaitlistState.objects.create(event_id=tier.event_id, opened_at=opened, drawn_at=opened)
    waitlist_join(event_id=tier.event_id, customer_id=second.id)
    claim_release(claim_id=paid.id, reason=ReleaseReason.EXPIRED)  # lapsed while paying
    waitlist_tick_event(event_id=tier.event_id)
    token = waitlist_place(event_id=tier.event_id, customer_id=second.id).admission_token
    assert token
    sandbox.pay(payment.reference, send_webhook=False)
    webhook = sandbox.webhook(payment.reference)
    return tier, first, second, paid, payment, webhook, token


def test_a_late_success_takes_the_offered_ticket_back_and_the_offer_waits_again(
    api, client, sandbox
):
    """Invariant 5 first: the payment re-instates its claim on the ticket the
    second was offered; the next round withdraws that offer, and the second
    is first in line again for the next ticket."""
    tier, _first, second, paid, payment, webhook, token = paid_then_lapsed(api, sandbox)
    assert post_webhook(client, *webhook).status_code == 200
    assert reload(payment).status == "CONFIRMED"
    assert reload(paid).status == ClaimStatus.CONFIRMED
    report = waitlist_tick_event(event_id=tier.event_id)
    assert report.withdrawn == [str(second.id)]
    place = waitlist_place(event_id=tier.event_id, customer_id=second.id)
    assert (place.status, place.position) == (WaitlistStatus.WAITING.value, 1)
    refused = claim_outcome(tier, second, token)
    assert isinstance(refused, AppError)
    assert refused.code in ("sold_out", "admission_expired")
    assert not Claim.objects.filter(customer=second).exists()
    assert_list_invariants(tier.event_id)


def test_an_offer_lapsing_while_its_payment_succeeds_is_never_lost(api, client, sandbox):
    """The success and the second's claim race. Either the first is
    re-instated (the second's offer withdrawn, the second first in line
    again) or the second has the ticket and the first's money is to be
    refunded; never both, never neither."""
    tier, _first, second, paid, payment, webhook, token = paid_then_lapsed(api, sandbox)

    def success():
        return post_webhook(client, *webhook).status_code

    results = race(lambda fn: fn(), [success, lambda: claim_outcome(tier, second, token)])
    assert results[0] == 200
    waitlist_tick_event(event_id=tier.event_id)
    payment = reload(payment)
    second_holds = Claim.objects.filter(customer=second, status=ClaimStatus.CLAIMED).exists()
    if payment.status == "CONFIRMED":
        assert reload(paid).status == ClaimStatus.CONFIRMED
        assert not second_holds
        place = waitlist_place(event_id=tier.event_id, customer_id=second.id)
        assert (place.status, place.position) == (WaitlistStatus.WAITING.value, 1)
    else:
        assert payment.status in ("REFUND_REQUIRED", "REFUNDED", "REFUND_PENDING")
        assert second_holds
    assert Ticket.objects.filter(tier=tier, claim__isnull=False).count() == 1
    assert_list_invariants(tier.event_id)
