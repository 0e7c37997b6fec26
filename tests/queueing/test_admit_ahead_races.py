"""More admitted than tickets are free (admitting ahead of no-shows), all
claiming at once, with real threads on real Postgres and Redis: the ticket
rows (invariant 1) sell exactly the free tickets, whatever Redis says, and
every customer who finds none left is told so and put first on the waiting
list. The guard is first shown switched off (the oversell happens), then
holding. And an admission's one extension, asked for many times at once."""

from __future__ import annotations

import time
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from claims.models import Claim
from claims.services import claim_create
from claims.services import claiming as claiming_module
from events.models import Event
from fairqueue.errors import AppError
from fairqueue.redis import get_redis
from inventory.models import Ticket
from inventory.store import inventory_store
from queueing import services
from queueing.models import QueueEntry, WaitlistEntry
from queueing.services.waitlist import waitlist_place
from queueing.store import queue_store
from tests.support.races import race
from tests.support.sales import join, make_customers, make_event

pytestmark = pytest.mark.django_db(transaction=True)

TICKETS = 40


def over_admitted():
    """An event of 40 tickets admitting ahead, half its admissions so far
    lapsed: the tick admits 42 (5 % of 40, rounded down, beyond the 40).
    Returns (tier, [(customer, admission token)])."""
    event = make_event(tickets=TICKETS, admit_ahead=True)
    then = timezone.now() - timedelta(minutes=5)
    QueueEntry.objects.bulk_create(
        [
            QueueEntry(
                event=event,
                customer=customer,
                status="EXPIRED" if n < 10 else "COMPLETED",
                end_reason="admission_window" if n < 10 else "",
                score=n,
                admitted_at=then,
                admission_expires_at=then + timedelta(minutes=2),
            )
            for n, customer in enumerate(make_customers(20))
        ]
    )
    QueueEntry.objects.bulk_create(
        [
            QueueEntry(event=event, customer=customer, score=1_000 + n)
            for n, customer in enumerate(make_customers(50))
        ]
    )
    report = services.admission_tick_event(event_id=event.id)
    assert (report.admitted, report.ahead) == (TICKETS + 2, 2)
    admitted = []
    for entry in QueueEntry.objects.filter(event=event, status="ADMITTED").select_related(
        "customer"
    ):
        position = services.queue_position(event_id=event.id, customer_id=entry.customer_id)
        admitted.append((entry.customer, position.admission_token))
    return event.tiers.get(), admitted


def claim_until_answered(tier, buyer):
    """A well-behaved page: 503 busy means "retry shortly"."""
    customer, token = buyer
    for _ in range(100):
        try:
            return claim_create(
                event_id=tier.event_id,
                customer_id=customer.id,
                admission_token=token,
                tier_id=tier.id,
                quantity=1,
            )
        except AppError as exc:
            if exc.code != "busy":
                return exc
            time.sleep(0.01)
    raise AssertionError("still busy after retries")


def outcome(results) -> Counter:
    return Counter(r.code if isinstance(r, AppError) else type(r).__name__ for r in results)


def inflate(tier, value: int = 10_000) -> None:
    """Redis says far more tickets are left than are (stale, or healed wrong)."""
    get_redis().set(inventory_store().counter_key(tier.event_id, tier.id), value)


def test_without_the_ticket_rows_guard_those_ahead_are_sold_tickets_that_do_not_exist(
    monkeypatch,
):
    monkeypatch.setattr(claiming_module, "TICKET_GUARD", False)
    tier, buyers = over_admitted()
    inflate(tier)
    results = race(lambda b: claim_until_answered(tier, b), buyers)
    assert outcome(results) == {"Claim": TICKETS + 2}
    assert Claim.objects.filter(tier=tier).count() == TICKETS + 2  # 2 more than exist


def test_those_admitted_ahead_never_oversell_and_who_finds_none_is_first_on_the_waiting_list():
    assert claiming_module.TICKET_GUARD is True
    tier, buyers = over_admitted()
    inflate(tier)

    results = race(lambda b: claim_until_answered(tier, b), buyers)

    assert outcome(results) == {"Claim": TICKETS, "sold_out": 2}
    assert Claim.objects.filter(tier=tier).count() == TICKETS
    assert Ticket.objects.filter(tier=tier, claim__isnull=False).count() == TICKETS
    assert Event.objects.get(pk=tier.event_id).status == "SOLD_OUT"
    refused = [b for b, r in zip(buyers, results, strict=True) if isinstance(r, AppError)]
    for customer, _ in refused:
        entry = QueueEntry.objects.get(event_id=tier.event_id, customer=customer)
        assert (entry.status, entry.end_reason) == ("EXPIRED", "sold_out")
    places = sorted(
        waitlist_place(event_id=tier.event_id, customer_id=c.id).position for c, _ in refused
    )
    assert places == [1, 2]
    assert WaitlistEntry.objects.filter(event_id=tier.event_id).count() == 2
    assert not QueueEntry.objects.filter(event_id=tier.event_id, status="ADMITTED").exists()
    store = queue_store()
    assert store.r.zcard(store.admitted_key(tier.event_id)) == 0


def test_many_asks_at_once_extend_an_admission_once():
    event = make_event(tickets=5)
    customer, _ = join(event)
    services.admission_tick_event(event_id=event.id)
    before = QueueEntry.objects.get(event=event, customer=customer).admission_expires_at

    def ask(_):
        return services.admission_extend(event_id=event.id, customer_id=customer.id)

    results = race(ask, list(range(8)))

    assert outcome(results) == {"Extension": 1, "already_extended": 7}
    entry = QueueEntry.objects.get(event=event, customer=customer)
    assert entry.admission_expires_at == before + timedelta(seconds=event.admission_window_seconds)
