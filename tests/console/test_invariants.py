"""console.invariants: every check passes on a clean sale made through the
services, the API and the sandbox gateway, and each one fails on a violation
made by hand (rows written directly), naming what is wrong; the other checks
keep passing, so a failure points at the invariant that broke."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from claims.models import Claim
from console.invariants import check_invariants, checks_to_run
from fairqueue.errors import NotFound
from inventory.models import Ticket
from tests.support.factories import CustomerFactory, EventFactory
from tests.support.invariants import failing
from tests.support.sales import (
    admit_directly,
    claim_one,
    claim_seats,
    expire,
    hold_tickets,
    make_customers,
    on_sale_reserved,
)

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
    "one_live_holder",
    "seats_carried",
    "refund_after_resale",
    "resale_refunds_flagged",
    "void_codes_refused",
    "waitlist_one_per_customer",
    "purchase_accounts_balance",
    "gateway_refunds_once",
    "transfers_agree",
}
SETTLED = {
    "offers_within_free_tickets",
    "sold_out_means_none_free",
    "claims_expired_in_time",
    "admissions_expired_in_time",
    "payments_settled",
    "resale_refunds_settled",
    "redis_agrees",
}


# --- which checks run ----------------------------------------------------------------


def test_every_spec_invariant_has_a_check_and_the_flags_add_the_settled_ones():
    assert {c.name for c in checks_to_run()} == ALWAYS
    assert {c.name for c in checks_to_run(settled=True)} == ALWAYS | SETTLED
    assert {c.name for c in checks_to_run(settled=True, redis=False)} == (
        ALWAYS | SETTLED - {"redis_agrees"}
    )
    assert {c.name for c in checks_to_run(sold_out=True)} == ALWAYS | {"sold_equals_inventory"}
    assert {c.invariant for c in checks_to_run(settled=True)} == {1, 2, 3, 4, 5, 6, 7, 8}


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


def test_a_claim_not_holding_the_seats_it_names_fails_invariant_1():
    tier = on_sale_reserved(rows=1, seats_per_row=4, max_tickets_per_customer=2)
    claim = claim_seats(tier, admit_directly(tier.event, make_customers(1))[0], ["A-1", "A-2"])
    assert "claims_hold_their_tickets" not in failing(tier.event)

    Claim.objects.filter(pk=claim.pk).update(seats=["A-1", "A-3"])
    Ticket.objects.filter(tier=tier, label="A-1").update(blocked=True)

    assert failing(tier.event)["claims_hold_their_tickets"] == (
        "1 holding claim not holding the seats it names; 1 blocked seat held by a claim"
    )


# --- invariant 8: tickets that changed hands ------------------------------------------


def _a_ticket_replaced(paid_sale):
    """The first buyer's ticket moved on (as a transfer leaves it): void, its
    replacement issued under another purchase."""
    from claims.models import Claim, IssuedTicket

    old = IssuedTicket.objects.filter(claim_id=paid_sale.paid[0].claim_id).first()
    other = IssuedTicket.objects.filter(claim_id=paid_sale.paid[1].claim_id).first()
    IssuedTicket.objects.filter(pk=old.pk).update(status="VOID", void_reason="transferred")
    IssuedTicket.objects.filter(pk=other.pk).update(replaces=old)
    Claim.objects.filter(pk=old.claim_id).update(moved=1)
    return old, other


def test_tickets_that_changed_hands_fail_invariant_8_when_two_are_live(paid_sale):
    from claims.models import IssuedTicket

    old, _new = _a_ticket_replaced(paid_sale)
    assert "one_live_holder" not in failing(paid_sale.event)
    IssuedTicket.objects.filter(pk=old.pk).update(status="VALID", void_reason="")
    assert "one_live_holder" in failing(paid_sale.event)


def test_a_void_code_let_in_or_a_seat_not_carried_fails_invariant_8(paid_sale):
    from datetime import timedelta

    from django.utils import timezone

    from claims.models import IssuedTicket

    old, new = _a_ticket_replaced(paid_sale)
    now = timezone.now()
    IssuedTicket.objects.filter(pk=old.pk).update(
        voided_at=now, checked_in_at=now + timedelta(seconds=1)
    )
    IssuedTicket.objects.filter(pk=new.pk).update(seat_label="Z-9")
    failed = failing(paid_sale.event)
    assert {"void_codes_refused", "seats_carried"} <= set(failed)


def test_a_return_refunded_before_its_resale_fails_invariant_8(paid_sale):
    import uuid

    from claims.models import IssuedTicket, TicketReturn
    from inventory.models import Ticket

    ticket = IssuedTicket.objects.filter(claim_id=paid_sale.paid[0].claim_id).first()
    TicketReturn.objects.create(
        ticket=ticket,
        claim_id=ticket.claim_id,
        event=paid_sale.event,
        ticket_row=Ticket.objects.filter(claim_id=ticket.claim_id).first(),
        status="WITHDRAWN",
        refund_amount=1,
        currency="NGN",
        refund_id=uuid.uuid4(),
    )
    assert "refund_after_resale" in failing(paid_sale.event)
