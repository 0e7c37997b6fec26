"""console.invariants: every check passes on a clean sale made through the
services, the API and the sandbox gateway, and each one fails on a violation
made by hand (rows written directly), naming what is wrong; the other checks
keep passing, so a failure points at the invariant that broke."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
import redis
from django.db import connection
from django.utils import timezone

from claims.models import Claim
from console.invariants import check_invariants, checks_to_run
from console.services import redis_rebuild
from fairqueue.errors import NotFound
from inventory import store as inventory_store_module
from inventory.models import Ticket
from inventory.store import InventoryStore
from payments.models import Payment, PaymentEvent, WebhookReceipt
from queueing import services as queue_services
from queueing.store import QueueStore
from tests.support.factories import CustomerFactory, EventFactory
from tests.support.payments import pending_payment
from tests.support.sales import admit_directly, claim_one, expire, hold_tickets, make_customers

pytestmark = pytest.mark.django_db

ALWAYS = {
    "tickets_within_inventory",
    "claims_hold_their_tickets",
    "inventory_truth",
    "released_claims_hold_nothing",
    "one_purchase_per_customer",
    "paid_means_confirmed",
    "payment_in_flight_flag",
    "no_expiry_under_payment",
    "late_successes_kept",
    "payments_confirmed_once",
    "payment_log_complete",
    "payment_amounts_match",
    "payment_log_append_only",
}
SETTLED = {
    "sold_out_means_none_free",
    "claims_expired_in_time",
    "admissions_expired_in_time",
    "payments_settled",
    "redis_agrees",
}


def failing(event, **options) -> dict[str, str]:
    """{check: detail} of the failed checks for this event (and the database)."""
    report = check_invariants(event_ids=[event.pk], **options)
    return {result.check: result.detail for _, result in report.failures()}


# --- which checks run ----------------------------------------------------------------


def test_every_spec_invariant_has_a_check_and_the_flags_add_the_settled_ones():
    assert {c.name for c in checks_to_run()} == ALWAYS
    assert {c.name for c in checks_to_run(settled=True)} == ALWAYS | SETTLED
    assert {c.name for c in checks_to_run(settled=True, redis=False)} == (
        ALWAYS | SETTLED - {"redis_agrees"}
    )
    assert {c.name for c in checks_to_run(sold_out=True)} == ALWAYS | {"sold_equals_inventory"}
    assert {c.invariant for c in checks_to_run(settled=True)} == {1, 2, 3, 4, 5, 6, 7}


# --- a clean sale ----------------------------------------------------------------------


def test_a_clean_sale_passes_every_check(paid_sale):
    report = check_invariants(event_ids=[paid_sale.event.pk], settled=True)

    assert report.ok, report.failures()
    assert [e.event_id for e in report.events] == [str(paid_sale.event.pk)]
    assert len(report.results()) == len(ALWAYS | SETTLED)
    assert report.events[0].counts == {
        "claims": {"CONFIRMED": 3, "RELEASED": 1},
        "payments": {"CONFIRMED": 3, "FAILED": 1},
        "queue": {"COMPLETED": 4},
    }
    details = {r.check: r.detail for _, r in report.results()}
    assert details["tickets_within_inventory"] == "held/inventory: Regular 2/3, VIP 1/1"
    assert details["inventory_truth"] == "Regular 1 free, VIP 0 free"
    assert (
        details["redis_agrees"] == "counters Regular 1, VIP 0; waiting line 0 in order; admitted 0"
    )


def test_sold_equals_inventory_fails_until_the_last_ticket_is_sold(paid_sale, api, client, sandbox):
    assert failing(paid_sale.event, sold_out=True) == {
        "sold_equals_inventory": "inventory 4, sold by claims 3, sold ticket rows 3"
    }

    [last] = admit_directly(paid_sale.event, make_customers(1))
    paid_sale.buy(last, paid_sale.regular)

    assert failing(paid_sale.event, settled=True, sold_out=True) == {}
    paid_sale.event.refresh_from_db()
    assert paid_sale.event.status == "SOLD_OUT"


def test_without_event_ids_every_event_is_checked_and_an_unknown_one_is_refused(paid_sale):
    other = EventFactory(status="DRAFT")

    report = check_invariants()

    assert {e.event_id for e in report.events} == {str(paid_sale.event.pk), str(other.pk)}
    assert report.ok
    with pytest.raises(NotFound) as refused:
        check_invariants(event_ids=[paid_sale.event.pk, uuid.uuid4()])
    assert refused.value.code == "event_not_found"


# --- invariant 1 and 3: tickets ---------------------------------------------------------


def test_an_oversold_tier_fails_invariants_1_and_3(paid_sale):
    # A claim Postgres did not give tickets to: the tier is over its inventory.
    Claim.objects.create(
        event=paid_sale.event,
        tier=paid_sale.vip,
        customer=CustomerFactory(),
        quantity=1,
        amount=paid_sale.vip.price,
        currency="NGN",
        expires_at=timezone.now() + timedelta(minutes=10),
    )

    found = failing(paid_sale.event)

    assert set(found) == {
        "tickets_within_inventory",
        "claims_hold_their_tickets",
        "inventory_truth",
    }
    assert found["tickets_within_inventory"] == "VIP: claims hold 2 tickets > inventory 1"
    assert found["claims_hold_their_tickets"] == "1 holding claim whose ticket rows != quantity"
    assert found["inventory_truth"] == "VIP: 0 free ticket rows != inventory 1 - 2 held"


def test_a_missing_ticket_row_fails_invariant_1(paid_sale):
    Ticket.objects.filter(tier=paid_sale.regular, claim__isnull=True).delete()

    found = failing(paid_sale.event)

    assert set(found) == {"tickets_within_inventory", "inventory_truth"}
    assert found["tickets_within_inventory"] == "Regular: 2 ticket rows != inventory 3"


def test_a_ticket_moved_to_another_claim_fails_claims_hold_their_tickets(paid_sale):
    first, second = paid_sale.paid[0].claim, paid_sale.paid[1].claim
    Ticket.objects.filter(claim=first).update(claim=second)

    assert failing(paid_sale.event) == {
        "claims_hold_their_tickets": "2 holding claims whose ticket rows != quantity"
    }


# --- invariant 4: released tickets return ------------------------------------------------


def test_a_ticket_kept_by_a_released_claim_fails_invariant_4(paid_sale):
    Ticket.objects.filter(tier=paid_sale.regular, claim__isnull=True).update(
        claim=paid_sale.declined.claim
    )

    found = failing(paid_sale.event)

    assert set(found) == {"released_claims_hold_nothing", "inventory_truth"}
    assert found["released_claims_hold_nothing"] == "1 ticket row still held by released claims"


def test_a_sold_out_event_with_a_free_ticket_fails_once_settled(paid_sale):
    type(paid_sale.event).objects.filter(pk=paid_sale.event.pk).update(status="SOLD_OUT")

    assert failing(paid_sale.event) == {}  # not an always-true check: a release commits first
    assert failing(paid_sale.event, settled=True) == {
        "sold_out_means_none_free": "the event is SOLD_OUT with 1 free ticket"
    }


def test_an_unpaid_claim_past_expiry_fails_once_settled(paid_sale):
    [late] = admit_directly(paid_sale.event, make_customers(1))
    claim = claim_one(paid_sale.regular, late)
    expire(claim)

    assert failing(paid_sale.event) == {}
    assert failing(paid_sale.event, settled=True) == {
        "claims_expired_in_time": "1 unpaid claim CLAIMED past expiry"
    }
    assert failing(paid_sale.event, settled=True, grace_seconds=60) == {}


def test_an_admission_past_its_window_fails_once_settled(paid_sale):
    admit_directly(paid_sale.event, make_customers(2), window_seconds=-30)

    assert failing(paid_sale.event) == {}
    assert failing(paid_sale.event, settled=True) == {
        "admissions_expired_in_time": "2 queue entries ADMITTED past the window"
    }
    assert failing(paid_sale.event, settled=True, grace_seconds=60) == {}


# --- invariant 5: nobody pays and gets nothing -------------------------------------------


@pytest.mark.parametrize("which", ["payment_without_claim", "claim_without_payment"])
def test_paid_and_confirmed_out_of_step_fails_invariant_5(paid_sale, which):
    if which == "payment_without_claim":
        Claim.objects.filter(pk=paid_sale.paid[0].claim_id).update(status="CLAIMED")
        expected = "1 confirmed payment whose claim is not CONFIRMED"
    else:
        hold_tickets(paid_sale.regular, 1, status="CONFIRMED")
        expected = "1 confirmed claim without exactly one confirmed payment"

    assert failing(paid_sale.event) == {"paid_means_confirmed": expected}


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


def test_a_reported_success_left_failed_fails_invariant_5(paid_sale):
    Payment.objects.filter(pk=paid_sale.declined.pk).update(gateway_status="success")

    assert failing(paid_sale.event) == {"late_successes_kept": "1 paid payment left FAILED"}

    Payment.objects.filter(pk=paid_sale.declined.pk).update(
        flag_reason="amount 1 != expected 500000"
    )
    assert failing(paid_sale.event) == {}  # flagged: staff look at it


# --- invariant 6: one purchase per customer ----------------------------------------------


def test_two_purchases_by_one_customer_fail_invariant_6(paid_sale):
    with connection.cursor() as cursor:  # the constraint is the guard; take it away
        cursor.execute("DROP INDEX claim_one_purchase_per_event")
    buyer = paid_sale.paid[0].claim.customer
    second = hold_tickets(paid_sale.regular, 1)
    Claim.objects.filter(pk=second.pk).update(customer=buyer)

    found = failing(paid_sale.event)

    assert found == {
        "one_purchase_per_customer": f"customer {buyer.pk}: 2 holding claims of 2 tickets (max 1)"
    }


def test_more_tickets_than_allowed_fail_invariant_6(paid_sale):
    Ticket.objects.create(tier=paid_sale.regular)
    type(paid_sale.regular).objects.filter(pk=paid_sale.regular.pk).update(inventory=4)
    claim = hold_tickets(paid_sale.regular, 2)

    assert failing(paid_sale.event) == {
        "one_purchase_per_customer": f"customer {claim.customer_id}: 1 holding claim of "
        "2 tickets (max 1)"
    }


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

    assert failing(paid_sale.event) == {
        "payment_amounts_match": "1 payment paid a wrong amount or currency, not flagged"
    }

    Payment.objects.filter(pk=paid_sale.paid[0].pk).update(flag_reason="checked by staff")
    assert failing(paid_sale.event) == {}


def test_a_log_that_can_be_rewritten_fails_invariant_7(paid_sale):
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # ALTER TABLE waits for no FK check
        cursor.execute(
            "ALTER TABLE payments_paymentevent DISABLE TRIGGER payments_paymentevent_append_only"
        )

    report = check_invariants(event_ids=[paid_sale.event.pk])

    assert [(r.check, r.ok) for r in report.database] == [("payment_log_append_only", False)]
    assert report.database[0].detail == "trigger payments_paymentevent_append_only is disabled"
    assert [event for event, _ in report.failures()] == [None]


# --- invariant 2: Redis agrees with Postgres ----------------------------------------------


def test_a_wrong_counter_fails_redis_agreement(paid_sale, redis_clean):
    redis_clean.set(InventoryStore.counter_key(paid_sale.event.pk, paid_sale.regular.pk), 5)

    assert failing(paid_sale.event) == {}
    assert failing(paid_sale.event, settled=True) == {
        "redis_agrees": "Regular: counter 5 != 1 free in Postgres - 0 in flight"
    }
    assert failing(paid_sale.event, settled=True, redis=False) == {}


def test_a_flushed_redis_fails_until_it_is_rebuilt(paid_sale, redis_clean):
    customers = [CustomerFactory() for _ in range(3)]
    for customer in customers:
        queue_services.queue_join(event_id=paid_sale.event.pk, customer_id=customer.pk)
    admit_directly(paid_sale.event, make_customers(2))
    assert failing(paid_sale.event, settled=True) == {}

    redis_clean.flushdb()

    found = failing(paid_sale.event, settled=True)
    assert set(found) == {"redis_agrees"}
    assert found["redis_agrees"].startswith(
        "Regular: counter None != 1 free in Postgres - 0 in flight; "
        "VIP: counter None != 0 free in Postgres - 0 in flight; waiting line differs from "
        "position 1: Postgres has "
    )
    assert found["redis_agrees"].endswith(
        "Redis nothing (3 WAITING in Postgres); 2 ADMITTED entries missing from the admitted set"
    )

    redis_rebuild(event_id=paid_sale.event.pk)

    assert failing(paid_sale.event, settled=True) == {}


def test_the_waiting_line_in_another_order_fails_redis_agreement(paid_sale, redis_clean):
    customers = [CustomerFactory() for _ in range(3)]
    for customer in customers:
        queue_services.queue_join(event_id=paid_sale.event.pk, customer_id=customer.pk)
    key = QueueStore.waiting_key(paid_sale.event.pk)
    first, last = redis_clean.zrange(key, 0, 0)[0], redis_clean.zrange(key, -1, -1)[0]
    redis_clean.zadd(key, {first: redis_clean.zscore(key, last) + 1})  # first goes last

    found = failing(paid_sale.event, settled=True)

    assert set(found) == {"redis_agrees"}
    assert found["redis_agrees"].startswith("waiting line differs from position 1: Postgres has ")
    assert redis_clean.zcard(key) == 3  # same members: only the order is wrong


def test_an_admitted_member_postgres_does_not_know_fails_redis_agreement(paid_sale, redis_clean):
    redis_clean.zadd(QueueStore.admitted_key(paid_sale.event.pk), {str(uuid.uuid4()): 1})

    assert failing(paid_sale.event, settled=True) == {
        "redis_agrees": "1 member of the admitted set not ADMITTED"
    }


def test_redis_down_fails_redis_agreement_without_an_exception(paid_sale, monkeypatch):
    dead = redis.Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.2)
    monkeypatch.setattr(inventory_store_module, "_store", InventoryStore(client=dead))

    assert failing(paid_sale.event, settled=True) == {
        "redis_agrees": "Redis is unavailable: cannot compare"
    }
