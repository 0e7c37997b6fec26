"""Two money paths on one purchase at the same moment, on real Postgres and
Redis (threads, each on its own connection): a staff refund and a ticket
sent on being accepted, a staff refund and a return, a staff refund and
the resale's refund opening. Whichever wins, the purchase's account
balances and nobody is paid twice."""

from __future__ import annotations

from functools import partial

import pytest

from claims.models import Claim, IssuedTicket, TicketReturn
from claims.services import (
    purchase_balance,
    ticket_return,
    ticket_transfer_accept,
    ticket_transfer_create,
)
from fairqueue.errors import AppError
from ledger.domain import Bucket
from payments.models import Refund
from payments.services import payment_refund_by_staff, refunds, resale_refund_open
from tests.claims.resale_support import FEE, PRICE, admitted, resale_event
from tests.support.factories import CustomerFactory
from tests.support.invariants import failing
from tests.support.payments import reload
from tests.support.races import Between, race

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 4


def refund(buyer):
    return partial(
        payment_refund_by_staff, payment_id=buyer.payment.pk, actor="staff:ada", reason="race"
    )


def test_a_staff_refund_racing_a_transfer_accepted(shop, gateway):
    for _ in range(ROUNDS):
        tier = resale_event(tickets=2)
        (first,) = admitted(tier.event, 1)
        seller = shop(tier, first, quantity=2)
        _, sent = seller.tickets()
        friend = CustomerFactory()
        transfer = ticket_transfer_create(
            code=sent.code, customer_id=seller.customer.pk, email=friend.email
        )
        accept = partial(ticket_transfer_accept, transfer_id=transfer.pk, customer_id=friend.pk)

        refunded, accepted = race(lambda call: call(), [refund(seller), accept])

        assert isinstance(refunded, Refund), refunded
        theirs = IssuedTicket.objects.filter(customer=friend).first()
        if isinstance(accepted, IssuedTicket):  # the transfer first: one ticket left to refund
            assert refunded.amount == PRICE
            assert reload(theirs).status == "VALID"
        else:  # the refund first: the purchase was cancelled, the transfer with it
            assert isinstance(accepted, AppError) and accepted.status == 409, accepted
            assert refunded.amount == 2 * PRICE and theirs is None
        balance = purchase_balance(reload(seller.claim))
        assert balance[Bucket.IN_FLIGHT] + balance[Bucket.SENT] == 2 * PRICE
        assert failing(tier.event, redis=False) == {}


def refund_with_transfer_accepted_meanwhile(shop, monkeypatch) -> tuple:
    """The staff refund has read the purchase's account when the recipient
    accepts a ticket of it (forced: the accept runs right then)."""
    tier = resale_event(tickets=2)
    (first,) = admitted(tier.event, 1)
    seller = shop(tier, first, quantity=2)
    _, sent = seller.tickets()
    friend = CustomerFactory()
    transfer = ticket_transfer_create(
        code=sent.code, customer_id=seller.customer.pk, email=friend.email
    )
    seam = Between(
        monkeypatch,
        refunds,
        "purchase_balance",
        partial(ticket_transfer_accept, transfer_id=transfer.pk, customer_id=friend.pk),
    )
    made = refund(seller)()
    return tier, seller, friend, seam, made


def test_without_the_claim_lock_a_refund_pays_back_a_ticket_sent_on(shop, gateway, monkeypatch):
    monkeypatch.setattr(refunds, "claim_lock", lambda *, claim_id: Claim.objects.get(pk=claim_id))
    tier, _, friend, seam, made = refund_with_transfer_accepted_meanwhile(shop, monkeypatch)

    assert seam.state == "done"  # nothing held the accept back
    assert isinstance(seam.finish(), IssuedTicket)
    assert made.amount == 2 * PRICE  # the whole charge, and the recipient keeps a ticket
    assert IssuedTicket.objects.get(customer=friend).status == "VALID"
    assert failing(tier.event, redis=False) == {
        "purchase_accounts_balance": "1 purchase that gave back more than it held"
    }


def test_with_the_claim_lock_the_accept_waits_and_the_refund_is_whole(shop, gateway, monkeypatch):
    tier, _, friend, seam, made = refund_with_transfer_accepted_meanwhile(shop, monkeypatch)

    assert seam.state == "blocked"  # on the purchase's row, until the refund committed
    with pytest.raises(AppError) as refused:
        seam.finish()
    assert refused.value.code == "transfer_not_pending"  # the cancelled purchase ended it
    assert made.amount == 2 * PRICE
    assert not IssuedTicket.objects.filter(customer=friend).exists()
    assert failing(tier.event, redis=False) == {}


def test_a_staff_refund_racing_a_return(shop, gateway):
    for _ in range(ROUNDS):
        tier = resale_event(tickets=2)
        (first,) = admitted(tier.event, 1)
        seller = shop(tier, first, quantity=2)
        _, returned = seller.tickets()
        give_back = partial(ticket_return, code=returned.code, customer_id=seller.customer.pk)

        refunded, ret = race(lambda call: call(), [refund(seller), give_back])

        assert isinstance(refunded, Refund), refunded
        # Either way the whole purchase is refunded once: a return on resale
        # still belongs to it, and its resale ends with the cancellation.
        assert refunded.amount == 2 * PRICE
        if isinstance(ret, TicketReturn):
            assert reload(ret).status == "CANCELLED"
        else:
            assert isinstance(ret, AppError) and ret.status == 409, ret
        assert Refund.objects.filter(payment=seller.payment).count() == 1
        assert failing(tier.event, redis=False) == {}


def test_a_staff_refund_racing_the_resale_refund_opening(shop, gateway, monkeypatch):
    for _ in range(ROUNDS):
        tier = resale_event(tickets=2)
        first, second = admitted(tier.event, 2)
        seller = shop(tier, first, quantity=2)
        _, returned = seller.tickets()
        ticket_return(code=returned.code, customer_id=seller.customer.pk)
        with monkeypatch.context() as lost:  # the resale's news lost: opened by the race below
            lost.setattr("payments.receivers.enqueue", lambda *args: None)
            shop(tier, second)
        ret = TicketReturn.objects.get(ticket=returned)
        open_resale = partial(resale_refund_open, return_id=ret.pk)

        refunded, resale = race(lambda call: call(), [refund(seller), open_resale])

        # One refund of ours at a time: whichever came second waits (the
        # resale's for the next pass) or is refused with a reason; neither
        # ever takes the other's money.
        made = list(Refund.objects.filter(payment=seller.payment))
        assert len(made) == 1, (refunded, resale, made)
        (only,) = made
        if only.for_resale:
            assert only.amount == PRICE - FEE
            assert isinstance(refunded, AppError), refunded
        else:
            assert only.amount == PRICE  # the kept ticket, never the resold one's money
            assert resale == "waiting", resale
        balance = purchase_balance(reload(seller.claim))
        assert balance[Bucket.FEE] == FEE
        assert balance[Bucket.OWED] + balance[Bucket.IN_FLIGHT] + balance[Bucket.HELD] == (
            2 * PRICE - FEE
        )
        assert failing(tier.event, redis=False) == {}
