"""Where two money paths meet on one purchase (a resale refund and a refund
made in the gateway's dashboard, a refund and a ticket sent on, a lost
dispute and a return, a staff refund and a resale refund). Before the
purchase's account each of these paid money twice or left it unrecorded;
each test runs both paths through the real services and the sandbox
gateway, then reads the account, the gateway and the invariants."""

from __future__ import annotations

import json

import pytest

from claims.domain import ClaimStatus
from claims.models import IssuedTicket, TicketReturn
from claims.services import purchase_balance
from fairqueue.errors import InvalidTransition
from ledger.domain import Bucket
from payments.models import Refund
from payments.paystack import sign
from payments.services import (
    payment_mark_refunded,
    payment_refund_by_staff,
    payments_reconcile,
)
from tests.claims.resale_support import (
    FEE,
    PRICE,
    Buyer,
    admitted,
    resale_event,
    return_ticket,
)
from tests.support.factories import CustomerFactory, bearer
from tests.support.invariants import failing
from tests.support.payments import post_webhook, reload

pytestmark = pytest.mark.django_db


@pytest.fixture
def deliver(client, django_capture_on_commit_callbacks):
    """Post a signed webhook; what it starts after commit runs (tasks eager)."""

    def post(signed: tuple[bytes, str]) -> dict:
        with django_capture_on_commit_callbacks(execute=True):
            response = post_webhook(client, *signed)
        assert response.status_code == 200, response.content
        return response.json()

    return post


def resold(api, shop, on_commit, *, quantity: int = 2) -> tuple[Buyer, TicketReturn, list]:
    """A buyer of ``quantity`` tickets returns the last; someone else buys it
    and the resale's refund is sent (the gateway holds it pending)."""
    tier = resale_event(tickets=quantity)
    first, second = admitted(tier.event, 2)
    seller = shop(tier, first, quantity=quantity)
    *kept, returned = seller.tickets()
    assert return_ticket(api, seller, returned, on_commit).status_code == 202
    shop(tier, second)
    return seller, TicketReturn.objects.get(ticket=returned), kept


def money(api, buyer: Buyer) -> dict:
    answer = api.get(f"/api/v1/claims/{buyer.claim.pk}/", **bearer(buyer.customer))
    assert answer.status_code == 200, answer.content
    return answer.json()["money"]


def send_on(api, buyer: Buyer, ticket: IssuedTicket, on_commit) -> IssuedTicket:
    friend = CustomerFactory()
    with on_commit(execute=True):
        sent = api.post(
            f"/api/v1/tickets/{ticket.code}/transfer/",
            {"email": friend.email},
            format="json",
            **bearer(buyer.customer),
        )
        assert sent.status_code == 201, sent.content
        taken = api.post(
            f"/api/v1/transfers/{sent.json()['transfer_id']}/accept/", **bearer(friend)
        )
    assert taken.status_code == 200, taken.content
    return IssuedTicket.objects.get(customer=friend)


def test_a_dashboard_refund_while_a_resale_refund_is_open_is_recorded_as_its_own(
    api, shop, gateway, deliver, django_capture_on_commit_callbacks
):
    seller, ret, (kept,) = resold(api, shop, django_capture_on_commit_callbacks)
    resale = Refund.objects.get(pk=ret.refund_id)
    assert (resale.status, resale.amount) == ("PENDING", PRICE - FEE)

    made = gateway.dashboard_refund(seller.payment.reference, PRICE)
    deliver(gateway.refund_webhook(made["id"]))  # refund.pending, an id none of ours has
    gateway.settle_refund(str(made["id"]), "processed")
    deliver(gateway.refund_webhook(made["id"]))
    gateway.settle_refund(resale.gateway_refund_id, "processed")
    deliver(gateway.refund_webhook(int(resale.gateway_refund_id)))

    outside = Refund.objects.get(payment=seller.payment, requested_by="gateway")
    assert (outside.status, outside.amount, outside.gateway_refund_id) == (
        "PROCESSED",
        PRICE,
        str(made["id"]),
    )
    assert (reload(resale).status, reload(resale).amount) == ("PROCESSED", PRICE - FEE)
    payment = reload(seller.payment)
    assert (payment.status, payment.refunded_amount) == ("REFUNDED", 2 * PRICE - FEE)
    # The dashboard's refund cancelled the purchase like any refund.
    assert reload(seller.claim).status == ClaimStatus.RELEASED
    assert reload(kept).status == "VOID"
    assert money(api, seller) == {
        "currency": "NGN",
        "paid": 2 * PRICE,
        "refunded": 2 * PRICE - FEE,
        "refund_pending": 0,
        "fee_kept": FEE,
    }
    assert failing(seller.claim.event, redis=False) == {}


def test_a_refund_of_a_purchase_whose_ticket_was_sent_on_covers_only_the_ticket_held(
    api, shop, gateway, django_capture_on_commit_callbacks
):
    tier = resale_event(tickets=2)
    (first,) = admitted(tier.event, 1)
    seller = shop(tier, first, quantity=2)
    held, sent = seller.tickets()
    theirs = send_on(api, seller, sent, django_capture_on_commit_callbacks)

    refund = payment_refund_by_staff(
        payment_id=seller.payment.pk, actor="staff:ada", reason="cannot come"
    )

    assert (refund.amount, refund.full) == (PRICE, False)
    (asked,) = gateway.refunds_of(seller.payment.reference)
    assert asked["amount"] == PRICE  # never the full charge
    assert reload(held).status == "VOID"
    assert reload(theirs).status == "VALID"  # the recipient keeps their ticket
    balance = purchase_balance(reload(seller.claim))
    assert (balance[Bucket.SENT], balance[Bucket.IN_FLIGHT], balance.tickets) == (PRICE, PRICE, 0)
    assert failing(tier.event, redis=False) == {}


def test_marking_refunded_a_purchase_whose_ticket_was_sent_on_records_only_the_ticket_held(
    api, client, shop, gateway, django_capture_on_commit_callbacks
):
    tier = resale_event(tickets=2)
    (first,) = admitted(tier.event, 1)
    seller = shop(tier, first, quantity=2)
    _, sent = seller.tickets()
    theirs = send_on(api, seller, sent, django_capture_on_commit_callbacks)
    dispute(client, gateway, seller, "create")

    payment_mark_refunded(payment_id=seller.payment.pk, actor="staff:ada", note="by hand")

    assert reload(seller.payment).refunded_amount == PRICE
    assert money(api, seller)["refunded"] == PRICE
    assert reload(theirs).status == "VALID"
    assert failing(tier.event, redis=False) == {}


def test_a_dashboard_refund_of_the_whole_charge_after_a_ticket_was_sent_on_is_flagged(
    api, shop, gateway, deliver, django_capture_on_commit_callbacks
):
    """Staff refunded everything in the gateway's dashboard: it happened, so
    it is recorded; the recipient's ticket was paid for by that money, and
    the invariants say the purchase gave back more than it held."""
    tier = resale_event(tickets=2)
    (first,) = admitted(tier.event, 1)
    seller = shop(tier, first, quantity=2)
    _, sent = seller.tickets()
    send_on(api, seller, sent, django_capture_on_commit_callbacks)

    made = gateway.dashboard_refund(seller.payment.reference)
    gateway.settle_refund(str(made["id"]), "processed")
    deliver(gateway.refund_webhook(made["id"]))

    assert reload(seller.payment).refunded_amount == 2 * PRICE
    found = failing(tier.event, redis=False)
    assert "purchase_accounts_balance" in found, found
    assert "more than it held" in found["purchase_accounts_balance"]


def dispute(client, gateway, buyer: Buyer, event: str, **extra) -> None:
    """The sandbox's charge.dispute.<event> for the buyer's payment, delivered."""
    gateway.dispute(buyer.payment.reference, event=event, **extra)
    signed = gateway.dispute_webhook(buyer.payment.reference, event)
    assert post_webhook(client, *signed).status_code == 200


def test_a_lost_dispute_closes_returns_and_the_resale_refund(
    api, client, shop, gateway, django_capture_on_commit_callbacks
):
    tier = resale_event(tickets=2)
    first, second = admitted(tier.event, 2)
    seller = shop(tier, first, quantity=2)
    kept, returned = seller.tickets()
    on_commit = django_capture_on_commit_callbacks
    assert return_ticket(api, seller, returned, on_commit).status_code == 202
    dispute(client, gateway, seller, "create")
    dispute(client, gateway, seller, "resolve", resolution="merchant-accepted")
    assert reload(seller.payment).dispute == "lost"

    refused = return_ticket(api, seller, kept, on_commit)
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "ticket_not_movable"
    calls = gateway.stats()["refund_calls"]
    shop(tier, second)  # someone buys the ticket on resale

    ret = TicketReturn.objects.get(ticket=returned)
    assert (ret.status, ret.refund_id, ret.end_reason) == ("RESOLD", None, "nothing_owed")
    assert gateway.stats()["refund_calls"] == calls  # the bank paid it back: nothing sent
    assert payments_reconcile() == {}  # and nothing left to send
    balance = purchase_balance(reload(seller.claim))
    assert (balance[Bucket.LOST], balance[Bucket.OWED]) == (2 * PRICE, 0)
    assert failing(tier.event, redis=False) == {}


def test_a_staff_refund_while_a_resale_refund_is_open_is_refused_with_a_reason(
    api, shop, gateway, django_capture_on_commit_callbacks
):
    seller, _, _ = resold(api, shop, django_capture_on_commit_callbacks)
    before = Refund.objects.count()

    with pytest.raises(InvalidTransition, match="still with the gateway"):
        payment_refund_by_staff(payment_id=seller.payment.pk, actor="staff:ada", reason="x")

    assert Refund.objects.count() == before
    assert reload(seller.claim).status == ClaimStatus.CONFIRMED


def test_a_staff_refund_before_the_resale_refund_opens_leaves_the_resale_its_own(
    api, client, shop, gateway, deliver, django_capture_on_commit_callbacks, monkeypatch
):
    tier = resale_event(tickets=2)
    first, second = admitted(tier.event, 2)
    seller = shop(tier, first, quantity=2)
    _, returned = seller.tickets()
    on_commit = django_capture_on_commit_callbacks
    assert return_ticket(api, seller, returned, on_commit).status_code == 202
    monkeypatch.setattr("payments.receivers.enqueue", lambda *args: None)  # its news lost
    shop(tier, second)
    ret = TicketReturn.objects.get(ticket=returned)
    assert (ret.status, ret.refund_id) == ("RESOLD", None)

    with on_commit(execute=True):
        staff = payment_refund_by_staff(
            payment_id=seller.payment.pk, actor="staff:ada", reason="x"
        )

    assert (staff.amount, staff.full) == (PRICE, False)  # the kept ticket only, never the fee
    assert payments_reconcile() == {"resale_waiting": 1}  # one refund of ours at a time
    gateway.settle_refund(staff.gateway_refund_id, "processed")
    deliver(gateway.refund_webhook(int(staff.gateway_refund_id)))
    assert payments_reconcile() == {"resale_sent": 1}
    resale = Refund.objects.get(pk=reload(ret).refund_id)
    assert (resale.amount, resale.for_resale) == (PRICE - FEE, True)
    gateway.settle_refund(resale.gateway_refund_id, "processed")
    deliver(gateway.refund_webhook(int(resale.gateway_refund_id)))

    payment = reload(seller.payment)
    assert (payment.status, payment.refunded_amount) == ("REFUNDED", 2 * PRICE - FEE)
    assert [r["amount"] for r in gateway.refunds_of(payment.reference)] == [PRICE, PRICE - FEE]
    assert money(api, seller)["fee_kept"] == FEE
    assert payments_reconcile() == {}
    assert failing(tier.event, settled=True, redis=False) == {}


def test_a_refund_event_naming_no_refund_moves_none_until_the_gateway_names_it(
    api, client, shop, gateway, deliver, django_capture_on_commit_callbacks
):
    """Paystack's refund events carry no refund id: the event moves no
    refund by guess; the transaction's refunds are listed at the gateway
    and each is matched by its id."""
    seller, ret, _ = resold(api, shop, django_capture_on_commit_callbacks)
    resale = Refund.objects.get(pk=ret.refund_id)
    gateway.settle_refund(resale.gateway_refund_id, "processed")
    body, _ = gateway.refund_webhook(int(resale.gateway_refund_id))
    payload = json.loads(body)
    del payload["data"]["id"]
    raw = json.dumps(payload).encode()

    deliver((raw, sign(raw, gateway.app.secret_key)))

    # The look-up ran after commit (tasks run eagerly here) and found it by its id.
    assert reload(resale).status == "PROCESSED"
    assert Refund.objects.filter(payment=seller.payment).count() == 1
    assert failing(seller.claim.event, redis=False) == {}


def test_a_refund_event_in_another_currency_moves_nothing(
    api, shop, gateway, deliver, django_capture_on_commit_callbacks
):
    seller, ret, _ = resold(api, shop, django_capture_on_commit_callbacks)
    resale = Refund.objects.get(pk=ret.refund_id)
    gateway.settle_refund(resale.gateway_refund_id, "processed")
    body, _ = gateway.refund_webhook(int(resale.gateway_refund_id))
    payload = json.loads(body)
    payload["data"]["currency"] = "USD"
    raw = json.dumps(payload).encode()

    deliver((raw, sign(raw, gateway.app.secret_key)))

    assert reload(resale).status == "PENDING"
    assert reload(seller.payment).refunded_amount == 0
    assert seller.payment.events.filter(kind="flagged").count() == 1


def test_a_refund_the_gateway_settles_for_more_than_asked_is_reported(
    api, shop, gateway, deliver, django_capture_on_commit_callbacks
):
    """The gateway's word on what it gave back is recorded as it is; more
    than the resale owed comes out of the money backing the kept ticket,
    and the invariants say so."""
    seller, ret, _ = resold(api, shop, django_capture_on_commit_callbacks)
    resale = Refund.objects.get(pk=ret.refund_id)
    gateway.settle_refund(resale.gateway_refund_id, "processed")
    body, _ = gateway.refund_webhook(int(resale.gateway_refund_id))
    payload = json.loads(body)
    payload["data"]["amount"] = PRICE  # not the PRICE - FEE asked for
    raw = json.dumps(payload).encode()

    deliver((raw, sign(raw, gateway.app.secret_key)))

    assert reload(resale).amount == PRICE
    assert reload(seller.payment).refunded_amount == PRICE
    assert failing(seller.claim.event, redis=False) == {
        "purchase_accounts_balance": "1 purchase holding a ticket its money no longer backs"
    }
