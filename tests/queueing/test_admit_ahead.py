"""Admitting ahead of no-shows (an event's ``admit_ahead``, off by default):
near the end of a sale the tick lets the measured share of admissions that
lapse, at most 5 % of the free tickets, hold an admission beyond them. And
whoever is admitted when nothing is left is told at once and put first on
the waiting list, where the next ticket that comes back is offered to them
(even before the list's first-minute draw)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from claims.domain import ReleaseReason
from claims.services import claim_release
from events.models import Event
from queueing import services
from queueing.domain import (
    ADMIT_AHEAD_MAX_PERCENT,
    ADMIT_AHEAD_MIN_ENDED,
    admission_capacity,
    admit_ahead_count,
)
from queueing.models import QueueEntry, WaitlistEntry, WaitlistState
from queueing.services.waitlist import waitlist_join, waitlist_place
from queueing.services.waitlist_offers import waitlist_tick_event
from queueing.store import queue_store
from tests.support.factories import CustomerFactory
from tests.support.sales import admit_directly, hold_tickets, make_customers, make_event

pytestmark = pytest.mark.django_db


def ended_admissions(event, *, lapsed: int, claimed: int) -> None:
    """The event's history so far: admissions from the line that lapsed, and
    that became claims (the measured share of no-shows)."""
    then = timezone.now() - timedelta(minutes=5)
    QueueEntry.objects.bulk_create(
        [
            QueueEntry(
                event=event,
                customer=customer,
                status="EXPIRED" if n < lapsed else "COMPLETED",
                end_reason="admission_window" if n < lapsed else "",
                score=n,
                admitted_at=then,
                admission_expires_at=then + timedelta(minutes=2),
                finished_at=then + timedelta(minutes=2),
            )
            for n, customer in enumerate(make_customers(lapsed + claimed))
        ]
    )


def crowd(event, n: int) -> None:
    """``n`` customers waiting, in Postgres (the tick rebuilds Redis' line)."""
    QueueEntry.objects.bulk_create(
        [
            QueueEntry(event=event, customer=customer, score=1_000 + n)
            for n, customer in enumerate(make_customers(n))
        ]
    )


def admitted(event) -> int:
    return QueueEntry.objects.filter(event=event, status="ADMITTED").count()


# --- the rule ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("free", "lapsed", "claimed", "ahead"),
    [
        (100, 10, 10, 5),  # half lapse: held to 5 % of the free tickets
        (100, 1, 49, 2),  # 2 % lapse: 2 of 100
        (40, 10, 10, 2),
        (19, 10, 10, 0),  # 5 % of 19 rounds down to none
        (100, 5, 5, 0),  # too few ended to measure a share
        (100, 0, 50, 0),  # nobody lapses: nobody ahead
        (0, 10, 10, 0),
    ],
)
def test_ahead_is_the_measured_share_of_no_shows_at_most_5_percent(free, lapsed, claimed, ahead):
    assert (ADMIT_AHEAD_MAX_PERCENT, ADMIT_AHEAD_MIN_ENDED) == (5, 20)
    got = admit_ahead_count(free_tickets=free, lapsed=lapsed, claimed=claimed)
    assert got == ahead
    assert got <= free * ADMIT_AHEAD_MAX_PERCENT / 100


def test_capacity_counts_those_ahead_beside_the_free_tickets():
    limits = dict(batch_size=500, max_active_admitted=5000, admitted_now=40, free_tickets=40)
    assert admission_capacity(**limits) == 0
    assert admission_capacity(**limits, ahead=2) == 2
    assert admission_capacity(**{**limits, "admitted_now": 43}, ahead=2) == 0


# --- the tick ------------------------------------------------------------------------


def test_admitting_ahead_is_off_by_default():
    event = make_event(tickets=100)
    assert event.admit_ahead is False
    ended_admissions(event, lapsed=10, claimed=10)
    crowd(event, 110)

    first = services.admission_tick_event(event_id=event.id)
    second = services.admission_tick_event(event_id=event.id)

    assert (first.admitted, first.ahead, second.admitted) == (100, 0, 0)
    assert admitted(event) == 100


def test_on_it_admits_the_measured_share_ahead_never_past_the_bound():
    event = make_event(tickets=100, admit_ahead=True)
    ended_admissions(event, lapsed=10, claimed=10)  # half lapse: the bound decides
    crowd(event, 120)

    first = services.admission_tick_event(event_id=event.id)
    second = services.admission_tick_event(event_id=event.id)

    assert (first.admitted, first.ahead) == (105, 5)
    assert second.admitted == 0
    assert admitted(event) == 105
    assert QueueEntry.objects.filter(event=event, status="WAITING").count() == 15


def test_on_it_admits_no_more_than_the_share_that_lapses():
    event = make_event(tickets=100, admit_ahead=True)
    ended_admissions(event, lapsed=1, claimed=49)  # 2 %
    crowd(event, 120)
    assert services.admission_tick_event(event_id=event.id).admitted == 102


def test_nobody_is_admitted_ahead_before_the_share_is_measured_or_beside_an_offer():
    event = make_event(tickets=100, admit_ahead=True)
    ended_admissions(event, lapsed=5, claimed=5)
    crowd(event, 120)
    assert services.admission_tick_event(event_id=event.id).admitted == 100

    other = make_event(tickets=100, admit_ahead=True)
    ended_admissions(other, lapsed=10, claimed=10)
    QueueEntry.objects.create(
        event=other,
        customer=CustomerFactory(),
        status="ADMITTED",
        score=0,
        admitted_at=timezone.now(),
        admission_expires_at=timezone.now() + timedelta(minutes=2),
        offer_tier=other.tiers.get(),
    )
    crowd(other, 120)
    report = services.admission_tick_event(event_id=other.id)
    assert (report.admitted, report.ahead) == (99, 0)  # the offer holds one of the 100


# --- nothing left: first on the waiting list ----------------------------------------


def test_the_tick_puts_those_admitted_ahead_of_a_sold_out_event_first_on_the_waiting_list(
    run_on_commit,
):
    event = make_event(tickets=2, admit_ahead=True)
    tier = event.tiers.get()
    hold_tickets(tier, 2)
    Event.objects.filter(pk=event.pk).update(status="SOLD_OUT")
    WaitlistState.objects.create(event=event, opened_at=timezone.now() - timedelta(seconds=5))
    early = CustomerFactory()
    waitlist_join(event_id=event.id, customer_id=early.id)  # in the first minute: drawn later
    late_first, late_second = admit_directly(event, make_customers(2))

    report = run_on_commit(services.admission_tick_event, event_id=event.id)

    assert report.sold_out == 2
    for a in (late_first, late_second):
        a.entry.refresh_from_db()
        assert (a.entry.status, a.entry.end_reason) == ("EXPIRED", "sold_out")
    store = queue_store()
    assert store.r.zcard(store.admitted_key(event.id)) == 0
    places = [
        waitlist_place(event_id=event.id, customer_id=a.customer.id)
        for a in (late_first, late_second)
    ]
    assert [(p.status, p.position) for p in places] == [("waiting", 1), ("waiting", 2)]
    assert all(p.entry.score < 0 and p.entry.tier_id is None for p in places)
    # The one who joined the list before waits for the draw, behind them.
    assert waitlist_place(event_id=event.id, customer_id=early.id).position is None
    position = services.queue_position(event_id=event.id, customer_id=late_first.customer.id)
    assert (position.status, position.reason) == ("EXPIRED", "sold_out")
    # Again: nothing more to move.
    assert services.admission_tick_event(event_id=event.id).sold_out == 0
    assert WaitlistEntry.objects.filter(event_id=event.id).count() == 3


def test_without_admitting_ahead_the_tick_leaves_admissions_to_their_time_to_choose():
    """A customer admitted behind others who claimed several tickets each
    keeps the admission (a ticket may come back within it); only their own
    claim finding none left ends it."""
    event = make_event(tickets=1)
    hold_tickets(event.tiers.get(), 1)
    Event.objects.filter(pk=event.pk).update(status="SOLD_OUT")
    (admitted,) = admit_directly(event, make_customers(1))
    assert services.admission_tick_event(event_id=event.id).sold_out == 0
    admitted.entry.refresh_from_db()
    assert admitted.entry.status == "ADMITTED"
    assert not WaitlistEntry.objects.filter(event_id=event.id).exists()


def test_a_returned_ticket_is_offered_first_to_them_even_before_the_draw():
    event = make_event(tickets=1, admit_ahead=True)
    tier = event.tiers.get()
    claim = hold_tickets(tier, 1)
    Event.objects.filter(pk=event.pk).update(status="SOLD_OUT")
    state = WaitlistState.objects.create(event=event, opened_at=timezone.now())
    drawn_later = CustomerFactory()
    waitlist_join(event_id=event.id, customer_id=drawn_later.id)
    (first,) = admit_directly(event, make_customers(1))
    assert services.admission_tick_event(event_id=event.id).sold_out == 1

    claim_release(claim_id=claim.id, reason=ReleaseReason.CUSTOMER)
    report = waitlist_tick_event(event_id=event.id)

    assert report.offered == [str(first.customer.id)]
    assert report.drawn == 0  # the first minute is not over: no draw yet
    state.refresh_from_db()
    assert state.drawn_at is None
    offer = waitlist_place(event_id=event.id, customer_id=first.customer.id)
    assert offer.status == "offered" and offer.admission_token
    assert waitlist_place(event_id=event.id, customer_id=drawn_later.id).status == "waiting"
