"""Returns and transfers under concurrency, on real Postgres and Redis
(threads): two buyers for one returned ticket, a return racing the door's
scan, a transfer racing a return, and the resale refund's webhook arriving
before the gateway's answer to the refund request is recorded."""

from __future__ import annotations

import pytest

from claims.models import IssuedTicket, TicketReturn, TicketTransfer
from claims.services import (
    issued_ticket_check_in,
    ticket_return,
    ticket_transfer_accept,
    ticket_transfer_create,
)
from fairqueue.errors import AppError
from inventory.models import Ticket
from payments.models import Refund
from payments.paystack import PaystackClient
from tests.claims.resale_support import FEE, PRICE, admitted, resale_event
from tests.support.factories import CustomerFactory
from tests.support.invariants import failing
from tests.support.payments import post_webhook, reload
from tests.support.races import Between, race, race_calls
from tests.support.sales import claim_one

pytestmark = pytest.mark.django_db(transaction=True)


def codes(results):
    return sorted(r.code if isinstance(r, AppError) else "ok" for r in results)


def test_two_buyers_for_one_returned_ticket(shop, django_capture_on_commit_callbacks):
    tier = resale_event(tickets=1, max_tickets_per_customer=1)
    seller_in, *buyers = admitted(tier.event, 3)
    seller = shop(tier, seller_in)
    (ticket,) = seller.tickets()
    with django_capture_on_commit_callbacks(execute=True):
        ticket_return(code=ticket.code, customer_id=seller.customer.pk)
    results = race(lambda who: claim_one(tier, who), buyers)
    winners = [r for r in results if not isinstance(r, Exception)]
    assert len(winners) == 1, results
    # The loser is told it is gone (or, while the winner's claim is in
    # flight, to retry: then it is gone).
    assert codes(results) in (["ok", "sold_out"], ["busy", "ok"])
    loser = buyers[1] if results[0] is winners[0] else buyers[0]
    with pytest.raises(AppError) as gone:
        claim_one(tier, loser)
    assert gone.value.code == "sold_out"
    row = Ticket.objects.get(tier=tier)
    assert (row.claim_id, row.resale_from_id) == (winners[0].pk, seller.claim.pk)
    assert reload(ticket).status == "ON_RESALE"  # nobody paid yet
    assert not Refund.objects.exists()
    assert failing(tier.event) == {}


def test_a_return_racing_the_door_scan(shop):
    tier = resale_event(tickets=3, max_tickets_per_customer=3)
    (seller_in,) = admitted(tier.event, 1)
    seller = shop(tier, seller_in, quantity=3)
    outcomes = set()
    for ticket in seller.tickets():  # three rounds, one ticket each
        code = ticket.code
        calls = [
            lambda code=code: ticket_return(code=code, customer_id=seller.customer.pk),
            lambda code=code: issued_ticket_check_in(
                event_id=tier.event_id, code=code, actor="door"
            ),
        ]
        results = race(lambda call: call(), calls)
        won = [not isinstance(r, Exception) for r in results]
        assert won.count(True) == 1, results
        ticket.refresh_from_db()
        if won[0]:  # the return: on resale, never let in
            outcomes.add("returned")
            assert isinstance(results[1], AppError) and results[1].code == "ticket_on_resale"
            assert (ticket.status, ticket.checked_in_at) == ("ON_RESALE", None)
            assert TicketReturn.objects.get(ticket=ticket).ticket_row.claim_id is None
        else:  # the scan: used, nothing on sale
            outcomes.add("scanned")
            assert isinstance(results[0], AppError) and results[0].code == "ticket_already_used"
            assert ticket.status == "USED"
            assert not TicketReturn.objects.filter(ticket=ticket).exists()
    free = Ticket.objects.filter(tier=tier, claim__isnull=True)
    assert (
        free.count()
        == TicketReturn.objects.count()
        == free.filter(resale_from=seller.claim).count()
    )
    assert failing(tier.event) == {}


def test_a_transfer_racing_a_return(shop):
    tier = resale_event(tickets=3, max_tickets_per_customer=3)
    (seller_in,) = admitted(tier.event, 1)
    seller = shop(tier, seller_in, quantity=3)
    for ticket in seller.tickets():  # three rounds, one ticket each
        friend = CustomerFactory()
        transfer = ticket_transfer_create(
            code=ticket.code, customer_id=seller.customer.pk, email=friend.email
        )
        # A pending transfer refuses a return that sees it: race the
        # acceptance against a return that got past that check.
        results = race_calls(
            lambda kind, ticket=ticket, transfer=transfer, friend=friend: (
                ticket_transfer_accept(transfer_id=transfer.pk, customer_id=friend.pk)
                if kind == "accept"
                else _return_ignoring_pending(ticket, seller)
            ),
            [{"kind": "accept"}, {"kind": "return"}],
        ).results()
        won = [not isinstance(r, Exception) for r in results]
        assert won.count(True) == 1, results
        ticket.refresh_from_db()
        if won[0]:
            assert ticket.status == "VOID" and ticket.void_reason == "transferred"
            assert Ticket.objects.filter(claim__customer=friend).count() == 1
            assert not TicketReturn.objects.filter(ticket=ticket).exists()
        else:
            assert ticket.status == "ON_RESALE"
            assert TicketTransfer.objects.get(pk=transfer.pk).status == "PENDING"
            assert not IssuedTicket.objects.filter(customer=friend).exists()
    assert failing(tier.event) == {}


def _return_ignoring_pending(ticket, seller):
    TicketTransfer.objects.filter(ticket=ticket).update(status="CANCELLED")
    try:
        return ticket_return(code=ticket.code, customer_id=seller.customer.pk)
    finally:
        TicketTransfer.objects.filter(ticket=ticket, status="CANCELLED").update(status="PENDING")


def test_refund_webhook_before_the_refund_answer(
    monkeypatch, client, gateway, shop, django_capture_on_commit_callbacks
):
    """The gateway refunds and its refund.processed webhook arrives before
    our record of its answer to the request: the resale refund is settled
    once, and the first buyer's purchase and payment stay as they are."""
    tier = resale_event(tickets=2)
    first, second = admitted(tier.event, 2)
    seller = shop(tier, first, quantity=2)
    kept, returned = seller.tickets()
    with django_capture_on_commit_callbacks(execute=True):
        ticket_return(code=returned.code, customer_id=seller.customer.pk)

    def webhook_first():
        (refund,) = gateway.refunds_of(seller.payment.reference)
        gateway.settle_refund(refund["id"], "processed")
        body, signature = gateway.refund_webhook(refund["id"])
        return post_webhook(client, body, signature).status_code

    seam = Between(monkeypatch, PaystackClient, "refund", webhook_first)
    shop(tier, second)  # pays for the returned ticket: the refund starts
    assert seam.finish() == 200
    refund = Refund.objects.get()
    payment = reload(seller.payment)
    assert (refund.status, refund.amount, refund.for_resale) == ("PROCESSED", PRICE - FEE, True)
    assert (payment.status, payment.refunded_amount) == ("CONFIRMED", PRICE - FEE)
    assert reload(kept).status == "VALID" and reload(seller.claim).status == "CONFIRMED"
    assert TicketReturn.objects.get().refund_id == refund.pk
    assert failing(tier.event) == {}
