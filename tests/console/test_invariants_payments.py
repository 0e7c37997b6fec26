"""console.invariants, payments: nobody pays and gets nothing (invariant 5)
and every money movement is recorded (invariant 7). Each check fails on a
violation made by hand on a sale paid through the API and the sandbox."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from claims.models import Claim
from console.invariants import check_invariants
from inventory.models import Ticket
from ledger.domain import charge_moves
from ledger.services import account_post
from payments.models import Payment, PaymentEvent, WebhookReceipt
from tests.support.invariants import failing
from tests.support.payments import pending_payment
from tests.support.sales import admit_directly, claim_one, hold_tickets, make_customers

pytestmark = pytest.mark.django_db

# --- invariant 5: nobody pays and gets nothing -------------------------------------------


@pytest.mark.parametrize("which", ["payment_without_claim", "claim_without_payment"])
def test_paid_and_confirmed_out_of_step_fails_invariant_5(paid_sale, which):
    also = {}
    if which == "payment_without_claim":
        Claim.objects.filter(pk=paid_sale.paid[0].claim_id).update(status="CLAIMED")
        expected = "1 confirmed payment whose claim is not CONFIRMED"
        # Its account still holds the tickets the claim no longer does.
        also = {"purchase_accounts_balance": "1 purchase whose tickets are not its live tickets"}
    else:
        hold_tickets(paid_sale.regular, 1, status="CONFIRMED")
        expected = "1 confirmed claim without exactly one confirmed payment"

    assert failing(paid_sale.event) == {"paid_means_confirmed": expected, **also}


def test_payment_in_flight_flag_must_match_the_live_payment(paid_sale, api):
    Claim.objects.filter(pk=paid_sale.paid[0].claim_id).update(payment_in_flight=True)
    assert failing(paid_sale.event) == {
        "payment_in_flight_flag": "1 claim flagged in flight without a live payment"
    }
    Claim.objects.filter(pk=paid_sale.paid[0].claim_id).update(payment_in_flight=False)

    [buyer] = admit_directly(paid_sale.event, make_customers(1))
    payment = pending_payment(api, claim_one(paid_sale.regular, buyer))
    assert failing(paid_sale.event) == {}
    Claim.objects.filter(pk=payment.claim_id).update(payment_in_flight=False)

    assert failing(paid_sale.event) == {
        "payment_in_flight_flag": "1 claim with a live payment but not flagged"
    }


def test_a_claim_expired_under_its_live_payment_fails_invariant_5(paid_sale, api):
    [buyer] = admit_directly(paid_sale.event, make_customers(1))
    claim = claim_one(paid_sale.regular, buyer)
    pending_payment(api, claim)
    assert failing(paid_sale.event) == {}
    assert failing(paid_sale.event, settled=True) == {"payments_settled": "1 payment still PENDING"}

    Claim.objects.filter(pk=claim.pk).update(status="RELEASED", release_reason="expired")
    Ticket.objects.filter(claim=claim).update(claim=None)

    assert failing(paid_sale.event) == {
        "no_expiry_under_payment": "1 claim expired with a payment in flight"
    }


@pytest.mark.parametrize(
    "reported",
    [
        {"gateway_status": "success"},
        # A wrong amount is flagged, but its money was taken all the same.
        {"gateway_status": "success", "paid_amount": 1, "flag_reason": "amount 1 != expected"},
        {"paid_amount": 500_000, "paid_currency": "NGN"},
    ],
)
def test_money_taken_and_left_failed_fails_invariant_5(paid_sale, reported):
    """The gateway took money for a payment left FAILED: neither kept for a
    ticket nor refunded nor on its way back."""
    Payment.objects.filter(pk=paid_sale.declined.pk).update(**reported)

    assert failing(paid_sale.event) == {"late_successes_kept": "1 paid payment left FAILED"}

    declined = Payment.objects.get(pk=paid_sale.declined.pk)
    Payment.objects.filter(pk=declined.pk).update(status="REFUND_REQUIRED")
    PaymentEvent.objects.create(
        payment=declined,
        kind="state_change",
        from_status="FAILED",
        to_status="REFUND_REQUIRED",
        actor="test",
    )
    # The move writes the charge in the purchase's account, as the service's does.
    account_post(
        claim_id=declined.claim_id,
        moves=charge_moves(amount=declined.paid_amount or declined.amount, tickets=0),
        currency="NGN",
        actor="test",
        payment_id=declined.pk,
    )
    assert failing(paid_sale.event) == {}  # on its way back


# --- invariant 7: every money movement recorded -------------------------------------------


def log_state_change(payment: Payment, from_status: str, to_status: str) -> None:
    PaymentEvent.objects.create(
        payment=payment,
        kind="state_change",
        from_status=from_status,
        to_status=to_status,
        actor="test",
    )


def test_a_payment_confirmed_twice_in_the_log_fails_invariant_7(paid_sale):
    log_state_change(paid_sale.paid[0], "CONFIRMED", "CONFIRMED")

    assert failing(paid_sale.event) == {
        "payments_confirmed_once": "1 payment confirmed 2 times in the log"
    }


def test_a_status_change_missing_from_the_log_fails_invariant_7(paid_sale, api):
    [buyer] = admit_directly(paid_sale.event, make_customers(1))
    payment = pending_payment(api, claim_one(paid_sale.regular, buyer))
    Payment.objects.filter(pk=payment.pk).update(status="INITIALIZING")

    assert failing(paid_sale.event) == {
        "payment_log_complete": f"{payment.reference} is INITIALIZING but its log ends at PENDING"
    }


def test_a_state_change_out_of_sequence_fails_invariant_7(paid_sale):
    log_state_change(paid_sale.paid[0], "PENDING", "CONFIRMED")

    found = failing(paid_sale.event)

    assert set(found) == {"payment_log_complete", "payments_confirmed_once"}
    assert found["payment_log_complete"] == (
        f"{paid_sale.paid[0].reference}: 1 state change out of sequence"
    )


def test_a_confirmed_payment_with_no_confirmation_logged_fails_invariant_7(paid_sale):
    claim = hold_tickets(paid_sale.regular, 1, status="CONFIRMED")
    payment = Payment.objects.create(
        claim=claim,
        customer=claim.customer,
        reference="fq_unlogged",
        email="buyer@example.test",
        amount=claim.amount,
        currency="NGN",
        status="CONFIRMED",
        paid_amount=claim.amount,
        paid_currency="NGN",
        next_check_at=timezone.now(),
    )

    assert failing(paid_sale.event) == {
        "payments_confirmed_once": "1 confirmed payment with no confirmation in the log",
        "payment_log_complete": f"{payment.reference} is CONFIRMED but its log ends at "
        "INITIALIZING",
        "purchase_accounts_balance": "1 purchase with money taken and no account",
    }


def test_a_webhook_delivery_missing_from_the_log_fails_invariant_7(paid_sale):
    WebhookReceipt.objects.create(
        event_type="charge.failed", reference=paid_sale.paid[0].reference, payment=paid_sale.paid[0]
    )

    assert failing(paid_sale.event) == {
        "payment_log_complete": "1 payment whose webhook deliveries != logged ones"
    }


@pytest.mark.parametrize(
    "change", [{"paid_amount": 1}, {"paid_currency": "USD"}, {"paid_amount": None}]
)
def test_a_confirmed_payment_of_another_amount_fails_invariant_7_unless_flagged(paid_sale, change):
    Payment.objects.filter(pk=paid_sale.paid[0].pk).update(**change)
    # A paid amount rewritten by hand also disagrees with the purchase's account.
    also = (
        {"purchase_accounts_balance": "1 purchase whose charges are not what its payments took"}
        if change.get("paid_amount") == 1
        else {}
    )

    assert failing(paid_sale.event) == {
        "payment_amounts_match": "1 payment paid a wrong amount or currency, not flagged",
        **also,
    }

    Payment.objects.filter(pk=paid_sale.paid[0].pk).update(flag_reason="checked by staff")
    assert failing(paid_sale.event) == also


def test_a_log_that_can_be_rewritten_fails_invariant_7(paid_sale):
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # ALTER TABLE waits for no FK check
        cursor.execute(
            "ALTER TABLE payments_paymentevent DISABLE TRIGGER payments_paymentevent_append_only"
        )

    report = check_invariants(event_ids=[paid_sale.event.pk])

    [failed] = [r for r in report.database if not r.ok]
    assert failed.check == "payment_log_append_only"
    assert failed.detail == "trigger payments_paymentevent_append_only is disabled"
    assert [event for event, _ in report.failures()] == [None]
