"""A tier's inventory has a cap, its ticket rows are made by Postgres in one
statement whatever their number (the admin's side: tests/console). An
organizer typing 500,000 once held one admin request for 85 s and wrote
53 MB."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from events.domain import MAX_TIER_INVENTORY
from events.models import Event, TicketTier
from events.services import tier_create, tier_update
from fairqueue.errors import InvalidInput
from inventory.models import Ticket
from tests.support.factories import EventFactory

pytestmark = pytest.mark.django_db


def test_an_inventory_over_the_cap_is_refused_and_nothing_is_made():
    event = EventFactory()

    with pytest.raises(InvalidInput) as refused:
        tier_create(event=event, name="Huge", price=100, inventory=MAX_TIER_INVENTORY + 1)

    assert "inventory" in refused.value.details
    assert TicketTier.objects.count() == 0
    assert Ticket.objects.count() == 0


def test_raising_a_tier_over_the_cap_is_refused_and_its_rows_stay():
    tier = tier_create(event=EventFactory(), name="Regular", price=100, inventory=10)

    with pytest.raises(InvalidInput):
        tier_update(tier_id=tier.pk, name="Regular", price=100, inventory=500_000)

    tier.refresh_from_db()
    assert tier.inventory == 10
    assert Ticket.objects.filter(tier=tier).count() == 10


def test_the_model_refuses_an_inventory_over_the_cap():
    tier = TicketTier(event=EventFactory(), name="Huge", price=100, inventory=500_000)

    with pytest.raises(ValidationError) as refused:
        tier.full_clean()

    assert list(refused.value.message_dict) == ["inventory"]


def statements_to_provision(event: Event, name: str, inventory: int) -> int:
    with CaptureQueriesContext(connection) as queries:
        tier = tier_create(event=event, name=name, price=100, inventory=inventory)
    assert Ticket.objects.filter(tier=tier).count() == inventory
    return sum(q["sql"].lstrip().upper().startswith("INSERT INTO") for q in queries)


def test_the_ticket_rows_are_made_in_one_statement_whatever_their_number():
    event = EventFactory()

    small = statements_to_provision(event, "Small", 10)
    capped = statements_to_provision(event, "Capped", MAX_TIER_INVENTORY)

    assert (small, capped) == (2, 2)  # the tier's row, then all of its tickets


def test_growing_and_shrinking_a_tier_sends_no_list_of_rows():
    """No statement carries the rows or their ids: Postgres picks them."""
    tier = tier_create(event=EventFactory(), name="Regular", price=100, inventory=5)

    with CaptureQueriesContext(connection) as grown:
        tier_update(tier_id=tier.pk, name="Regular", price=100, inventory=20_000)
    with CaptureQueriesContext(connection) as shrunk:
        tier_update(tier_id=tier.pk, name="Regular", price=100, inventory=5)

    longest = max(len(q["sql"]) for q in [*grown.captured_queries, *shrunk.captured_queries])
    assert longest < 2_000
    assert Ticket.objects.filter(tier=tier).count() == 5


def _ticket_stats_say_empty() -> None:
    """The ticket table's statistics as a fresh deployment's often are:
    analyzed while it held no live row but kept its pages, so the planner
    believes any number of rows to be none."""
    tier = tier_create(event=EventFactory(), name="Gone", price=100, inventory=500)
    Ticket.objects.filter(tier=tier).delete()
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Ticket._meta.db_table}")
        cursor.execute(
            "SELECT reltuples, relpages FROM pg_class WHERE oid = %s::regclass",
            [Ticket._meta.db_table],
        )
        assert cursor.fetchone()[0] == 0


def test_shrinking_a_tier_does_not_hang_on_statistics_that_say_empty():
    """Picked rows are deleted by their ids, never by a join the planner
    may turn into a scan of every row for every picked row (it took
    minutes for 20,000)."""
    _ticket_stats_say_empty()
    tier = tier_create(event=EventFactory(), name="Regular", price=100, inventory=20_000)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL statement_timeout = '10s'")

    tier_update(tier_id=tier.pk, name="Regular", price=100, inventory=5)

    assert Ticket.objects.filter(tier=tier).count() == 5


def test_taking_tickets_reaches_them_by_id_whatever_the_statistics():
    from inventory.services import _TAKE_SQL  # the statement under test

    _ticket_stats_say_empty()
    tier = tier_create(event=EventFactory(), name="Regular", price=100, inventory=20_000)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {_TAKE_SQL}", [str(tier.pk), 4, None])
        plan = json.dumps(cursor.fetchone()[0])

    assert "Join Filter" not in plan
