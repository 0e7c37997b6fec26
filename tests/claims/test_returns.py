"""Returns at face value: a returned ticket stays its holder's until someone
else has paid for it; then the old code is void, the buyer gets a new one
for the same seat, and the first buyer is refunded face value minus the fee
through the gateway's Refund API (the sandbox's, over HTTP). Withdrawn
before anyone pays, or never resold: nobody is refunded."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.db import DatabaseError, transaction
from django.utils import timezone

from claims.domain import ReleaseReason
from claims.models import Claim, TicketEvent, TicketReturn
from claims.services import claim_release, issued_ticket_check_in
from console.exports import holder_rows
from fairqueue.errors import Conflict
from inventory.models import Ticket
from inventory.signals import tickets_freed
from payments.models import Refund
from tests.claims.resale_support import (
    FEE,
    PRICE,
    admitted,
    my_tickets,
    resale_event,
    return_ticket,
)
from tests.support.factories import bearer
from tests.support.invariants import failing
from tests.support.payments import post_webhook, reload
from tests.support.sales import claim_one, counter

pytestmark = pytest.mark.django_db


def door(ticket):
    return issued_ticket_check_in(event_id=ticket.event_id, code=ticket.code, actor="staff:door")


def test_return_resold_refunded(api, client, gateway, shop, django_capture_on_commit_callbacks):
    tier = resale_event(tickets=2)
    first, second = admitted(tier.event, 2)
    seller = shop(tier, first, quantity=2)
    kept, returned = seller.tickets()
    freed = []
    tickets_freed.connect(lambda **news: freed.append(news), weak=False, dispatch_uid="t")
    try:
        quote = api.get(f"/api/v1/tickets/{returned.code}/return/", **bearer(seller.customer))
        assert quote.json()["refund_amount"] == PRICE - FEE and quote.json()["fee"] == FEE
        answer = return_ticket(api, seller, returned, django_capture_on_commit_callbacks)
    finally:
        tickets_freed.disconnect(dispatch_uid="t")
    assert answer.status_code == 202, answer.content
    assert answer.json()["status"] == "on_resale"
    assert answer.json()["refund_amount"] == PRICE - FEE
    assert [(f["tier_id"], f["quantity"]) for f in freed] == [(tier.id, 1)]  # sent once
    assert counter(tier) == 1  # back in the live inventory: the queue admits for it
    statuses = {
        t["code"].replace("-", ""): t["status"] for t in my_tickets(api, seller.customer)["results"]
    }
    assert statuses == {kept.code: "valid", returned.code: "on_resale"}
    # Still the seller's, but never valid at the door while a buyer may take it.
    with pytest.raises(Conflict) as refused:
        door(returned)
    assert refused.value.code == "ticket_on_resale"
    assert not Refund.objects.exists()
    assert failing(tier.event) == {}

    buyer = shop(tier, second)  # the only free ticket is the returned one
    assert buyer.payment.status == "CONFIRMED"
    (new,) = buyer.tickets()
    assert new.code != returned.code and new.replaces_id == returned.pk
    assert reload(returned).status == "VOID" and returned.void_reason == "resold"
    with pytest.raises(Conflict) as void:
        door(returned)
    assert void.value.code == "ticket_void"
    ret = TicketReturn.objects.get(ticket=returned)
    assert ret.status == "RESOLD" and ret.resale_claim_id == buyer.claim.pk
    refund = Refund.objects.get(pk=ret.refund_id)
    assert refund.for_resale and refund.amount == PRICE - FEE and refund.payment == seller.payment
    assert refund.gateway_refund_id  # sent to the gateway already, automatically
    (at_gateway,) = gateway.refunds_of(seller.payment.reference)
    assert at_gateway["amount"] == PRICE - FEE
    # The purchase keeps its other ticket; its payment stays CONFIRMED.
    assert reload(seller.payment).status == "CONFIRMED"
    assert reload(kept).status == "VALID" and reload(seller.claim).status == "CONFIRMED"
    (note,) = [m for m in mail.outbox if "was resold" in m.subject]
    assert note.to == [seller.customer.email] and "5,000.00" not in note.body
    assert "4,500.00" in note.body and "500.00 fee" in note.body

    gateway.settle_refund(at_gateway["id"], "processed")
    with django_capture_on_commit_callbacks(execute=True):
        body, signature = gateway.refund_webhook(at_gateway["id"])
        assert post_webhook(client, body, signature).status_code == 200
    refund.refresh_from_db()
    payment = reload(seller.payment)
    assert refund.status == "PROCESSED"
    assert (payment.status, payment.refunded_amount) == ("CONFIRMED", PRICE - FEE)
    mine = {t["code"].replace("-", ""): t for t in my_tickets(api, seller.customer)["results"]}
    assert mine[returned.code]["status"] == "resold"
    assert mine[returned.code]["refund"]["status"] == "processed"
    assert mine[returned.code]["refund"]["amount"] == PRICE - FEE
    assert door(new).status == "USED"
    kinds = list(TicketEvent.objects.filter(ticket=returned).values_list("kind", flat=True))
    assert kinds == ["returned", "resold", "refund_requested"]
    # The ticket log is append-only: Postgres itself refuses to change it.
    for change in (lambda: TicketEvent.objects.update(kind="x"), TicketEvent.objects.all().delete):
        with pytest.raises(DatabaseError), transaction.atomic():
            change()
    # The ticket-holders export: each ticket's holder, code and history.
    exported = {
        r[0].replace("-", ""): (r[4], r[7], r[10])
        for r in holder_rows(Claim.objects.filter(event=tier.event))
    }
    email, status, history = exported[new.code]
    assert (email, status) == (buyer.customer.email, "USED")
    assert [step.split(" ", 2)[2] for step in history.split("; ")] == [
        "returned",
        "resold",
        "issued_for_resale",
        "refund_requested",
    ]
    assert exported[kept.code] == (seller.customer.email, "VALID", "")
    assert exported[returned.code][:2] == (seller.customer.email, "VOID")
    assert "resold" in exported[returned.code][2]
    assert failing(tier.event) == {}


def test_withdrawn_or_never_resold_nobody_refunded(
    api, gateway, shop, django_capture_on_commit_callbacks
):
    tier = resale_event(tickets=1, max_tickets_per_customer=1)
    first, second = admitted(tier.event, 2)
    seller = shop(tier, first)
    (ticket,) = seller.tickets()
    assert reload(tier.event).status == "SOLD_OUT"
    assert return_ticket(api, seller, ticket, django_capture_on_commit_callbacks).status_code == 202
    # Back into the line: on sale again, the queue admits for the returned ticket.
    assert reload(tier.event).status == "ACTIVE" and counter(tier) == 1
    # A buyer holds it (not paid yet): too late to withdraw.
    with django_capture_on_commit_callbacks(execute=True):
        hold = claim_one(tier, second)
    taken = api.delete(f"/api/v1/tickets/{ticket.code}/return/", **bearer(seller.customer))
    assert taken.status_code == 409 and taken.json()["error"]["code"] == "return_taken"
    # The buyer never pays: the ticket is on resale again, still the seller's.
    with django_capture_on_commit_callbacks(execute=True):
        claim_release(claim_id=hold.pk, reason=ReleaseReason.EXPIRED)
    row = Ticket.objects.get(tier=tier)
    assert row.claim_id is None and row.resale_from_id == seller.claim.pk
    assert reload(ticket).status == "ON_RESALE"
    with django_capture_on_commit_callbacks(execute=True):
        back = api.delete(f"/api/v1/tickets/{ticket.code}/return/", **bearer(seller.customer))
    assert back.status_code == 204
    assert reload(ticket).status == "VALID"
    row.refresh_from_db()
    assert (row.claim_id, row.resale_from_id) == (seller.claim.pk, None)
    assert counter(tier) == 0 and reload(tier.event).status == "SOLD_OUT"
    again = api.delete(f"/api/v1/tickets/{ticket.code}/return/", **bearer(seller.customer))
    assert again.status_code == 404 and again.json()["error"]["code"] == "return_not_found"
    assert not Refund.objects.exists()
    assert TicketReturn.objects.get().status == "WITHDRAWN"
    assert door(ticket).status == "USED"
    assert failing(tier.event) == {}


def test_returns_refused_when_closed_or_not_theirs(api, shop, django_capture_on_commit_callbacks):
    tier = resale_event(tickets=2, returns_until=timezone.now() - timedelta(minutes=1))
    first, other = admitted(tier.event, 2)
    seller = shop(tier, first)
    (ticket,) = seller.tickets()
    closed = return_ticket(api, seller, ticket, django_capture_on_commit_callbacks)
    assert closed.status_code == 409 and closed.json()["error"]["code"] == "returns_closed"
    stranger = api.post(f"/api/v1/tickets/{ticket.code}/return/", **bearer(other.customer))
    assert stranger.status_code == 404
    assert (
        api.post("/api/v1/tickets/not-a-code/return/", **bearer(seller.customer)).status_code == 404
    )
    assert reload(ticket).status == "VALID" and not TicketReturn.objects.exists()


def test_a_refunded_purchase_ends_its_returns(api, shop, django_capture_on_commit_callbacks):
    """Staff refund the whole purchase while a ticket is on resale: the
    return ends unsold, the row is a plain free ticket, one refund only."""
    from payments.services import payment_refund

    tier = resale_event(tickets=1, max_tickets_per_customer=1)
    (first,) = admitted(tier.event, 1)
    seller = shop(tier, first)
    (ticket,) = seller.tickets()
    return_ticket(api, seller, ticket, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        payment_refund(payment_id=seller.payment.pk, actor="staff:t", reason="cancelled")
    assert TicketReturn.objects.get().status == "CANCELLED"
    row = Ticket.objects.get(tier=tier)
    assert (row.claim_id, row.resale_from_id) == (None, None)
    assert reload(ticket).status == "VOID"
    assert Refund.objects.get().for_resale is False
    assert failing(tier.event) == {}
