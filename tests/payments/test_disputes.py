"""Disputes and reversals: recorded in the payment log, the payment and its
claim flagged for staff (admin filter "disputed"), the tickets valid until
staff decide; a verify answering "reversed" for a paid payment is the same."""

from __future__ import annotations

import json

import pytest

from claims.domain import ClaimStatus
from claims.services import purchase_balance
from fairqueue.errors import InvalidTransition
from ledger.domain import Bucket
from payments.models import Payment
from payments.services import payment_keep_tickets, payment_mark_refunded, payment_verify_now
from tests.support.factories import UserFactory
from tests.support.payments import (
    held_tickets,
    pending_payment,
    post_webhook,
    reload,
    transitions,
)

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/payments/payment/"


@pytest.fixture
def gateway(sandbox):
    sandbox.config(send_webhooks=False)
    return sandbox


def paid(api, client, gateway) -> Payment:
    payment = pending_payment(api)
    gateway.pay(payment.reference)
    body, signature = gateway.webhook(payment.reference)
    post_webhook(client, body, signature)
    return reload(payment)


def dispute(client, gateway, payment: Payment, event: str, **extra):
    """The sandbox's charge.dispute.<event> for this payment, delivered."""
    gateway.dispute(payment.reference, event=event, **extra)
    body, signature = gateway.dispute_webhook(payment.reference, event)
    response = post_webhook(client, body, signature)
    assert response.json() == {"status": "processed"}
    return json.loads(body)


def disputed_listed(staff_client) -> set[str]:
    response = staff_client.get(CHANGELIST, {"attention": "disputed"})
    return {p.reference for p in response.context["cl"].result_list}


@pytest.fixture
def staff(client):
    staff_client = type(client)()
    staff_client.force_login(UserFactory(username="ada", is_superuser=True))
    return staff_client


def test_dispute_create_flags_the_payment_and_claim_and_keeps_the_ticket(
    api, client, gateway, staff
):
    payment = paid(api, client, gateway)

    sent = dispute(client, gateway, payment, "create")

    payment = reload(payment)
    assert (payment.status, payment.dispute) == ("CONFIRMED", "open")
    claim = reload(payment.claim)
    assert claim.status == ClaimStatus.CONFIRMED
    assert claim.disputed_at is not None
    assert held_tickets(claim) == 1
    logged = payment.events.get(kind="dispute")
    assert (logged.data["from"], logged.data["to"], logged.data["dispute_id"]) == (
        "",
        "open",
        sent["data"]["id"],
    )
    received = payment.events.filter(kind="webhook_received").last()
    assert received.data["event"] == "charge.dispute.create"
    assert disputed_listed(staff) == {payment.reference}
    page = staff.get(f"{CHANGELIST}{payment.pk}/change/").content.decode()
    assert "Disputed: open" in page and "Keep the tickets" in page


def test_a_remind_repeats_nothing_but_the_log(api, client, gateway):
    payment = paid(api, client, gateway)
    dispute(client, gateway, payment, "create")
    dispute(client, gateway, payment, "remind")
    payment = reload(payment)
    assert payment.dispute == "open"
    assert payment.events.filter(kind="dispute").count() == 1  # the flag did not change
    assert payment.events.filter(kind="webhook_received").count() == 3


def test_resolved_for_us_clears_the_flags(api, client, gateway, staff):
    payment = paid(api, client, gateway)
    dispute(client, gateway, payment, "create")

    dispute(client, gateway, payment, "resolve", resolution="declined")

    payment = reload(payment)
    assert payment.dispute == "won"
    assert reload(payment.claim).disputed_at is None
    assert disputed_listed(staff) == set()


def test_lost_dispute_then_staff_mark_refunded_releases_the_tickets(api, client, gateway, staff):
    payment = paid(api, client, gateway)
    dispute(client, gateway, payment, "create")
    dispute(client, gateway, payment, "resolve", resolution="merchant-accepted")
    payment = reload(payment)
    assert payment.dispute == "lost"
    assert reload(payment.claim).status == ClaimStatus.CONFIRMED  # staff decide
    assert disputed_listed(staff) == {payment.reference}

    payment_mark_refunded(payment_id=payment.pk, actor="staff:ada", note="chargeback lost")

    payment = reload(payment)
    assert (payment.status, payment.dispute) == ("REFUNDED", "closed")
    # The bank gave the money back, not a refund: the purchase's account
    # shows it taken back, and nothing more is refundable.
    assert payment.refunded_amount == 0
    balance = purchase_balance(reload(payment.claim))
    assert (balance[Bucket.LOST], balance[Bucket.HELD], balance[Bucket.REFUNDED]) == (
        payment.amount,
        0,
        0,
    )
    assert transitions(payment)[-1] == ("CONFIRMED", "REFUNDED")
    claim = reload(payment.claim)
    assert (claim.status, claim.release_reason, claim.disputed_at) == (
        ClaimStatus.RELEASED,
        "refunded",
        None,
    )
    assert held_tickets(claim) == 0
    assert disputed_listed(staff) == set()


def test_staff_keep_the_tickets(api, client, gateway):
    payment = paid(api, client, gateway)
    dispute(client, gateway, payment, "create")

    payment_keep_tickets(payment_id=payment.pk, actor="staff:ada", note="used at the door")

    payment = reload(payment)
    assert (payment.status, payment.dispute) == ("CONFIRMED", "closed")
    claim = reload(payment.claim)
    assert (claim.status, claim.disputed_at) == (ClaimStatus.CONFIRMED, None)
    assert payment.events.filter(kind="staff_action", actor="staff:ada").count() == 1


def test_keep_tickets_without_a_dispute_is_refused(api, client, gateway):
    payment = paid(api, client, gateway)
    with pytest.raises(InvalidTransition):
        payment_keep_tickets(payment_id=payment.pk, actor="staff:ada")
    assert payment.events.filter(kind="staff_action").count() == 0


def test_mark_refunded_refuses_an_undisputed_paid_payment(api, client, gateway):
    payment = paid(api, client, gateway)
    with pytest.raises(InvalidTransition):
        payment_mark_refunded(payment_id=payment.pk, actor="staff:ada")
    assert reload(payment).status == "CONFIRMED"
    assert reload(payment.claim).status == ClaimStatus.CONFIRMED


def test_verify_answering_reversed_for_a_paid_payment_is_flagged_like_a_dispute(
    api, client, gateway, staff
):
    payment = paid(api, client, gateway)
    gateway.pay(payment.reference, outcome="reversed")

    assert payment_verify_now(payment_id=payment.pk, actor="staff:ada") == "reversed"

    payment = reload(payment)
    assert (payment.status, payment.dispute, payment.gateway_status) == (
        "CONFIRMED",
        "reversed",
        "reversed",
    )
    claim = reload(payment.claim)
    assert claim.status == ClaimStatus.CONFIRMED
    assert claim.disputed_at is not None
    assert disputed_listed(staff) == {payment.reference}
    assert payment.events.get(kind="dispute").data["source"] == "verify"
