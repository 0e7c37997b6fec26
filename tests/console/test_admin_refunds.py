"""An organizer refunds their own paid orders from the admin's orders,
through the same service and account as platform staff: the refund page
says what happens first, the gateway is asked for exactly what the order
still holds, the buyer is emailed, the account balances. Another
organizer's orders and payments are neither seen nor refunded, and the
stuck-payment tools stay platform staff's."""

from __future__ import annotations

import re

import pytest

from claims.models import IssuedTicket
from claims.services import issued_ticket_check_in
from payments.models import PaymentEvent, Refund
from tests.claims.resale_support import admitted, buy, resale_event
from tests.support.invariants import failing
from tests.support.payments import pending_payment, post_webhook, reload

pytestmark = pytest.mark.django_db

ORDERS = "/admin/console/order/"
PAYMENTS = "/admin/payments/payment/"
STUCK_TOOLS = {
    "verify_with_gateway", "fail_and_release", "mark_refunded", "keep_tickets",
    "retry_resale_refund",
}  # fmt: skip


@pytest.fixture
def gateway(sandbox):
    """Webhooks delivered by the test, refunds settled by hand."""
    sandbox.config(send_webhooks=False, refund_outcome="manual")
    return sandbox


def words(response) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def offered(response) -> set[str]:
    form = response.context["action_form"]
    return {name for name, _ in form.fields["action"].choices if name} if form else set()


def paid_order(api, client, gateway, on_commit, organizer, *, quantity: int = 2):
    """A buyer's paid order of ``quantity`` tickets for a new event of
    ``organizer`` (more tickets than bought: the sale goes on)."""
    tier = resale_event(tickets=6, organizer=organizer)
    (buyer_in,) = admitted(tier.event)
    return buy(api, client, gateway, on_commit, tier, buyer_in, quantity=quantity)


def test_an_organizer_refunds_their_own_order_whole(
    api, client, gateway, org_a, mailoutbox, eager_tasks, django_capture_on_commit_callbacks
):
    admin, _, organizer = org_a
    on_commit = django_capture_on_commit_callbacks
    buyer = paid_order(api, client, gateway, on_commit, organizer)
    order, payment = buyer.claim, buyer.payment
    first, _ = buyer.tickets()
    issued_ticket_check_in(event_id=order.event_id, code=first.code, actor="door")
    mailoutbox.clear()

    page = admin.get(f"{ORDERS}{order.pk}/change/")
    assert 'value="refund_orders"' in page.content.decode()
    assert "What you can do now Refund this order…" in words(page)
    asked = admin.post(ORDERS, {"action": "refund_orders", "_selected_action": [str(order.pk)]})

    assert asked.status_code == 200
    said = words(asked)
    assert "Refunds NGN 10,000.00 (all that is left to give back through this payment)." in said
    assert "Already at the door: 1 ticket below was checked in." in said
    assert f"Order {str(order.pk)[:8]} — 2 tickets — paid NGN 10,000.00" in said
    assert 'value="Refund, although checked in"' in asked.content.decode()
    assert (Refund.objects.count(), gateway.stats()["refund_calls"], mailoutbox) == (0, 0, [])

    with on_commit(execute=True):
        done = admin.post(
            ORDERS,
            {"action": "refund_orders", "_selected_action": [str(order.pk)], "apply": "1",
             "reason": "the show moved"},
            follow=True,
        )  # fmt: skip

    assert messages_of(done) == [
        f"Refunds asked for: {str(order.pk)[:8]} (NGN 10,000.00, pending)."
    ]
    (at_gateway,) = gateway.refunds_of(payment.reference)
    assert at_gateway["amount"] == 1_000_000
    order = reload(order)
    assert (order.status, order.release_reason) == ("RELEASED", "refunded")
    assert set(IssuedTicket.objects.filter(claim=order).values_list("status", flat=True)) == {
        "VOID"
    }
    (cancelled,) = mailoutbox
    assert cancelled.to == [buyer.customer.email]
    assert cancelled.subject.startswith("Cancelled: your tickets for")
    assert "cancelled and refunded: NGN 10,000.00" in cancelled.body
    assert {e.actor for e in order.account.filter(kind="refund_asked")} == {"organizer:alice"}
    (logged,) = PaymentEvent.objects.filter(payment=payment, kind="staff_action")
    assert (logged.actor, logged.data["action"]) == ("organizer:alice", "refund")

    gateway.settle_refund(at_gateway["id"], "processed")
    with on_commit(execute=True):
        assert post_webhook(client, *gateway.refund_webhook(at_gateway["id"])).status_code == 200

    payment = reload(payment)
    assert (payment.status, payment.refunded_amount) == ("REFUNDED", 1_000_000)
    assert failing(order.event) == {}


def test_an_organizer_neither_sees_nor_refunds_another_organizers_order(
    api, client, gateway, org_a, org_b, mailoutbox, django_capture_on_commit_callbacks
):
    admin, _, _ = org_a
    on_commit = django_capture_on_commit_callbacks
    theirs = paid_order(api, client, gateway, on_commit, org_b[2])
    mine = paid_order(api, client, gateway, on_commit, org_a[2], quantity=1)
    entries = theirs.claim.account.count()
    mailoutbox.clear()

    orders = admin.get(ORDERS)
    payments = admin.get(PAYMENTS)
    with on_commit(execute=True):
        refused = admin.post(
            ORDERS,
            {"action": "refund_orders", "_selected_action": [str(theirs.claim.pk)], "apply": "1",
             "reason": "not mine"},
            follow=True,
        )  # fmt: skip
        by_payment = admin.post(
            PAYMENTS,
            {"action": "refund", "_selected_action": [str(theirs.payment.pk)], "apply": "1",
             "reason": "not mine"},
            follow=True,
        )  # fmt: skip

    assert [o.pk for o in orders.context["cl"].result_list] == [mine.claim.pk]
    assert [p.pk for p in payments.context["cl"].result_list] == [mine.payment.pk]
    assert admin.get(f"{ORDERS}{theirs.claim.pk}/change/").status_code == 302  # as if none
    assert admin.get(f"{PAYMENTS}{theirs.payment.pk}/change/").status_code == 302
    assert messages_of(refused) == ["No order of yours was selected."]
    assert refused.status_code == by_payment.status_code == 200
    assert str(theirs.claim.pk)[:8] not in words(refused)
    # Nothing written, nothing asked of the gateway, nobody emailed.
    assert (Refund.objects.count(), gateway.stats()["refund_calls"], mailoutbox) == (0, 0, [])
    assert reload(theirs.claim).status == "CONFIRMED"
    assert reload(theirs.payment).status == "CONFIRMED"
    assert theirs.claim.account.count() == entries
    assert not PaymentEvent.objects.filter(payment=theirs.payment, kind="staff_action").exists()


def test_the_stuck_payment_tools_stay_platform_staffs(
    api, client, gateway, org_a, superuser_client, django_capture_on_commit_callbacks
):
    admin, _, organizer = org_a
    buyer = paid_order(api, client, gateway, django_capture_on_commit_callbacks, organizer)
    stuck = pending_payment(api)
    stuck.claim.event.organizer = organizer
    stuck.claim.event.save(update_fields=["organizer"])
    logged = PaymentEvent.objects.filter(payment=stuck).count()

    assert offered(admin.get(PAYMENTS)) == {"refund"}
    assert offered(superuser_client.get(PAYMENTS)) == STUCK_TOOLS | {"refund"}
    # The payment's page offers what its advice names, to whom may do it.
    assert "What you can do now" not in words(admin.get(f"{PAYMENTS}{stuck.pk}/change/"))
    staff_page = words(superuser_client.get(f"{PAYMENTS}{stuck.pk}/change/"))
    assert "What you can do now Verify with the gateway now Fail and release the claim…" in (
        staff_page
    )
    own_page = admin.get(f"{PAYMENTS}{buyer.payment.pk}/change/")
    assert "What you can do now Refund through the gateway…" in words(own_page)
    # Its account, not the gateway's raw log (platform staff's).
    assert "Paid" in words(own_page) and "/admin/payments/paymentevent/" not in words(own_page)
    assert "/admin/payments/paymentevent/" not in own_page.content.decode()
    for tool in STUCK_TOOLS:  # posted by hand: refused, nothing run
        admin.post(PAYMENTS, {"action": tool, "_selected_action": [str(stuck.pk)], "apply": "1"})
    assert reload(stuck).status == "PENDING"
    assert PaymentEvent.objects.filter(payment=stuck).count() == logged


def test_an_order_never_paid_is_not_refunded_and_the_page_says_so(
    api, client, gateway, org_a, django_capture_on_commit_callbacks
):
    admin, _, organizer = org_a
    unpaid = pending_payment(api)
    unpaid.claim.event.organizer = organizer
    unpaid.claim.event.save(update_fields=["organizer"])

    page = admin.post(
        ORDERS, {"action": "refund_orders", "_selected_action": [str(unpaid.claim_id)]}
    )
    done = admin.post(
        ORDERS,
        {"action": "refund_orders", "_selected_action": [str(unpaid.claim_id)], "apply": "1",
         "reason": "no"},
        follow=True,
    )  # fmt: skip

    assert "Not refunded now: this payment is PENDING: it cannot be refunded." in words(page)
    assert messages_of(done) == [
        f"{str(unpaid.claim_id)[:8]}: This payment cannot be refunded: it is PENDING."
    ]
    assert Refund.objects.count() == gateway.stats()["refund_calls"] == 0
