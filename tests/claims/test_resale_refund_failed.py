"""A resold ticket's refund that fails (the gateway refuses it, or its
webhook says it failed) is listed for staff as "Refund failed", like any
refund that failed; "Retry the resale refund" asks again and the money
goes back. The invariants see a resale refund that is neither paid nor
taken by the gateway."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from claims.models import TicketEvent, TicketReturn
from console.selectors import payments_attention
from payments.attention import payment_attention
from payments.models import Payment, Refund
from tests.claims.resale_support import (
    FEE,
    PRICE,
    Buyer,
    admitted,
    my_tickets,
    resale_event,
    return_ticket,
)
from tests.support.invariants import failing
from tests.support.payments import post_webhook, reload

pytestmark = pytest.mark.django_db

PAYMENTS = "/admin/payments/payment/"


def staff() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "r@example.test", None))
    return client


def resold(api, shop, on_commit, *, before_resale=None) -> tuple[Buyer, TicketReturn]:
    """A buyer of two tickets returns one and someone else buys it."""
    tier = resale_event(tickets=2)
    first, second = admitted(tier.event, 2)
    seller = shop(tier, first, quantity=2)
    _kept, returned = seller.tickets()
    assert return_ticket(api, seller, returned, on_commit).status_code == 202
    if before_resale:
        before_resale(seller)
    shop(tier, second)
    return seller, TicketReturn.objects.get(ticket=returned)


def listed_for_staff(client: Client, payment: Payment) -> bool:
    page = client.get(PAYMENTS, {"attention": "refund_failed"})
    assert page.status_code == 200
    return payment.reference in page.content.decode()


def test_a_refund_the_gateway_refuses_is_flagged(
    api, shop, gateway, django_capture_on_commit_callbacks
):
    # The seller's money went back by hand in the gateway's dashboard (its
    # news lost): the gateway refuses the resale refund as more than is left.
    seller, ret = resold(
        api,
        shop,
        django_capture_on_commit_callbacks,
        before_resale=lambda s: gateway.dashboard_refund(s.payment.reference, 2 * PRICE - 1),
    )

    refund = Refund.objects.get(pk=ret.refund_id)
    assert refund.status == "FAILED" and "greater than" in refund.failure_reason
    payment = reload(seller.payment)
    assert payment.status == "CONFIRMED"  # the purchase keeps its other ticket
    assert listed_for_staff(staff(), payment)
    (why,) = payment_attention(payment)
    assert (why.key, why.title) == ("refund_failed", "Resale refund failed")
    assert "4,500.00" in why.meaning and "greater than" in why.meaning
    assert payments_attention([ret.event_id])[ret.event_id]["refund_failed"] == 1
    assert failing(seller.claim.event) == {}  # flagged: staff know


def test_a_failed_resale_refund_is_flagged_and_a_retry_pays_it(
    api, client, shop, gateway, django_capture_on_commit_callbacks
):
    seller, ret = resold(api, shop, django_capture_on_commit_callbacks)
    (sent,) = gateway.refunds_of(seller.payment.reference)
    gateway.settle_refund(sent["id"], "failed")
    with django_capture_on_commit_callbacks(execute=True):
        assert post_webhook(client, *gateway.refund_webhook(sent["id"])).status_code == 200
    failed = Refund.objects.get(pk=ret.refund_id)
    assert failed.status == "FAILED"
    admin = staff()
    assert listed_for_staff(admin, seller.payment)
    assert failing(seller.claim.event) == {}
    mine = {t["ticket_id"]: t for t in my_tickets(api, seller.customer)["results"]}
    assert mine[str(ret.ticket_id)]["refund"]["status"] == "failed"

    with django_capture_on_commit_callbacks(execute=True):
        answer = admin.post(
            PAYMENTS,
            {"action": "retry_resale_refund", "_selected_action": [str(seller.payment.pk)]},
            follow=True,
        )
    assert "Resale refunds asked for again: 1 payment(s)." in answer.content.decode()
    ret.refresh_from_db()
    assert ret.refund_id != failed.pk
    retry = Refund.objects.get(pk=ret.refund_id)
    assert (retry.for_resale, retry.amount, retry.status) == (True, PRICE - FEE, "PENDING")
    assert not listed_for_staff(admin, seller.payment)
    # Asked for, not paid yet: once settled, that is not enough.
    assert failing(seller.claim.event) == {}
    (_, again) = gateway.refunds_of(seller.payment.reference)
    gateway.settle_refund(again["id"], "processed")
    with django_capture_on_commit_callbacks(execute=True):
        assert post_webhook(client, *gateway.refund_webhook(again["id"])).status_code == 200

    payment = reload(seller.payment)
    assert (payment.status, payment.refunded_amount) == ("CONFIRMED", PRICE - FEE)
    assert reload(retry).status == "PROCESSED" and reload(failed).status == "FAILED"
    assert payment_attention(payment) == []
    kinds = list(TicketEvent.objects.filter(ticket_id=ret.ticket_id).values_list("kind", flat=True))
    assert kinds == ["returned", "resold", "refund_requested", "refund_retried", "refund_requested"]
    assert failing(seller.claim.event) == {}
    assert "resale_refunds_settled" not in failing(seller.claim.event, settled=True, redis=False)
    # Nothing failed left to retry.
    refused = admin.post(
        PAYMENTS,
        {"action": "retry_resale_refund", "_selected_action": [str(payment.pk)]},
        follow=True,
    )
    assert "no failed resale refund" in refused.content.decode()


def test_a_resale_refund_never_sent_fails_the_settled_check(
    api, shop, gateway, django_capture_on_commit_callbacks
):
    seller, ret = resold(api, shop, django_capture_on_commit_callbacks)
    # As if the refund's news was lost before it was opened.
    Refund.objects.filter(pk=ret.refund_id).delete()
    TicketReturn.objects.filter(pk=ret.pk).update(refund_id=None)

    found = failing(seller.claim.event, settled=True, redis=False)

    assert found.get("resale_refunds_settled") == "1 resold return whose refund was never sent"
