"""Event and tier writes racing each other, with real threads on Postgres.

Each guard is shown twice: the race a naive read-then-write has, then the
service holding when the calls really overlap (tests/support/races.py).
"""

import threading

import pytest
from django.db import transaction

from events import services
from events.models import Event, TicketTier
from fairqueue.errors import InvalidTransition
from inventory.models import Ticket
from tests.support.factories import EventFactory, TierFactory
from tests.support.races import race_calls, wait_until_blocked

pytestmark = pytest.mark.django_db(transaction=True)


def holding_row(model, pk):
    """A transaction holding the row lock of ``model`` ``pk`` until it exits."""

    class _Hold:
        def __enter__(self):
            self.atomic = transaction.atomic()
            self.atomic.__enter__()
            model.objects.select_for_update().filter(pk=pk).get()

        def __exit__(self, *exc):
            return self.atomic.__exit__(*exc)

    return _Hold()


# --- pause racing end ---------------------------------------------------------------


def test_race_shown_without_the_guard_an_ended_event_comes_back_paused():
    event = EventFactory(status="ACTIVE")
    both_read, end_written = threading.Barrier(2), threading.Event()

    def naive(target: str, write_first: bool) -> None:
        current = Event.objects.get(pk=event.pk)
        assert current.status == "ACTIVE"  # each checks a legal move from what it read
        both_read.wait()
        if not write_first:
            end_written.wait(5)
        Event.objects.filter(pk=event.pk).update(status=target)  # unconditional
        if write_first:
            end_written.set()

    running = race_calls(
        naive,
        [{"target": "ENDED", "write_first": True}, {"target": "PAUSED", "write_first": False}],
    )
    results = running.results()

    assert results == [None, None]
    assert Event.objects.get(pk=event.pk).status == "PAUSED"  # ENDED was overwritten


def test_pause_racing_end_never_resurrects_an_ended_event():
    event = EventFactory(status="ACTIVE")
    TierFactory(event=event)

    with holding_row(Event, event.pk):
        running = race_calls(
            lambda service: service(event_id=event.pk),
            [{"service": services.event_end}, {"service": services.event_pause}],
        )
        wait_until_blocked(2)
    results = running.results()

    ended, paused = results
    assert isinstance(ended, Event) and ended.status == "ENDED"
    # pause went first (then end from PAUSED is legal) or was refused after end
    assert isinstance(paused, Event | InvalidTransition)
    assert Event.objects.get(pk=event.pk).status == "ENDED"


def test_two_parallel_pauses_change_the_event_once():
    event = EventFactory(status="ACTIVE")

    with holding_row(Event, event.pk):
        running = race_calls(services.event_pause, [{"event_id": event.pk}] * 2)
        wait_until_blocked(2)
    results = running.results()

    assert sum(isinstance(r, Event) for r in results) == 1
    assert sum(isinstance(r, InvalidTransition) for r in results) == 1
    assert Event.objects.get(pk=event.pk).status == "PAUSED"


# --- ticket rows follow the inventory -------------------------------------------------


def test_race_shown_without_the_guard_two_saves_create_too_many_ticket_rows():
    tier = TierFactory(inventory=10)
    barrier = threading.Barrier(2)

    def naive_provision(inventory: int) -> None:
        existing = Ticket.objects.filter(tier=tier).count()
        barrier.wait()  # both counted 10
        Ticket.objects.bulk_create([Ticket(tier=tier) for _ in range(inventory - existing)])

    running = race_calls(naive_provision, [{"inventory": 15}] * 2)
    results = running.results()

    assert results == [None, None]
    assert Ticket.objects.filter(tier=tier).count() == 20  # 5 tickets that do not exist


def test_parallel_provisioning_makes_exactly_the_inventory():
    tier = TierFactory(inventory=10)
    TicketTier.objects.filter(pk=tier.pk).update(inventory=15)
    copies = [TicketTier.objects.get(pk=tier.pk) for _ in range(2)]

    with holding_row(TicketTier, tier.pk):
        running = race_calls(
            services.tier_provision_tickets, [{"tier": copy} for copy in copies]
        )
        wait_until_blocked(2)
    results = running.results()

    assert results == [None, None]
    assert Ticket.objects.filter(tier=tier).count() == 15


def test_parallel_tier_updates_end_with_exactly_one_inventory_of_rows():
    tier = TierFactory(inventory=10, name="Regular", price=100)

    with holding_row(TicketTier, tier.pk):
        running = race_calls(
            services.tier_update,
            [
                {"tier_id": tier.pk, "name": "Regular", "price": 100, "inventory": 15},
                {"tier_id": tier.pk, "name": "Regular", "price": 100, "inventory": 12},
            ],
        )
        wait_until_blocked(2)
    results = running.results()

    assert all(isinstance(r, TicketTier) for r in results)
    tier.refresh_from_db()
    assert tier.inventory in (12, 15)
    assert Ticket.objects.filter(tier=tier).count() == tier.inventory
