"""Organizers' writes of seat maps: generated grids, CSV imports, blocked
seats (and what they do to the counters and the sale status)."""

from __future__ import annotations

import pytest

from events.models import Event, TicketTier
from events.services import seat_map_generate, seat_map_import_csv, seats_block, tier_update
from fairqueue.errors import AppError
from inventory.models import Ticket
from inventory.seating.domain import parse_seat_rows
from inventory.signals import seats_changed
from tests.support.factories import TierFactory
from tests.support.sales import (
    admit_directly,
    claim_seats,
    counter,
    make_customers,
    on_sale,
    on_sale_reserved,
)

pytestmark = pytest.mark.django_db(transaction=True)


def labels(tier) -> list[str]:
    return list(Ticket.objects.filter(tier=tier).order_by("id").values_list("label", flat=True))


def test_rows_a_to_t_of_30_seats():
    tier = on_sale(tickets=5)
    assert seat_map_generate(tier_id=tier.id, first_row="A", last_row="T", seats_per_row=30) == 600
    tier.refresh_from_db()
    assert (tier.kind, tier.inventory) == ("reserved", 600)
    got = labels(tier)
    assert (len(got), got[0], got[29], got[30], got[-1]) == (600, "A-1", "A-30", "B-1", "T-30")
    assert counter(tier) == 600


def test_a_csv_import_with_sections_coordinates_and_flags():
    tier = TierFactory(inventory=3)
    text = (
        "section,row,number,x,y,flags\n"
        "Stalls,A,1,10,5,accessible\n"
        "Stalls,A,2,12,5,\n"
        "Balcony,A,1,,,restricted_view|accessible\n"
    )
    assert seat_map_import_csv(tier_id=tier.id, text=text) == 3
    seats = {t.label: t for t in Ticket.objects.filter(tier=tier)}
    assert set(seats) == {"Stalls:A-1", "Stalls:A-2", "Balcony:A-1"}
    assert (seats["Stalls:A-1"].x, seats["Stalls:A-1"].y, seats["Stalls:A-1"].accessible) == (
        10, 5, True
    )  # fmt: skip
    balcony = seats["Balcony:A-1"]
    assert (balcony.restricted_view, balcony.accessible, balcony.x, balcony.y) == (
        True, True, 1, 2
    )  # fmt: skip
    assert TicketTier.objects.get(pk=tier.pk).inventory == 3


@pytest.mark.parametrize(
    "text",
    [
        "Stalls,A\n",
        "Stalls,A,x\n",
        "Stalls,A,0\n",
        "Stalls,A,1,1,nan\n",
        "Stalls,A,1,,,golden\n",
        "Stalls,A,1\nStalls,A,1\n",
        "",
        # Out of bounds: a map no page can draw, a number or a name the table cannot hold.
        "Stalls,A,1,1e300,1\n",
        "Stalls,A,1,-1e308,1\nStalls,A,2,1e308,1\n",
        "Stalls,A,1,1,10001\n",
        "Stalls,A,9999999999\n",
        "Stalls,A,100000\n",
        f"{'S' * 32},{'R' * 16},1\n",
    ],
)
def test_a_bad_csv_changes_nothing(text):
    tier = TierFactory(inventory=3)
    with pytest.raises(AppError) as caught:
        seat_map_import_csv(tier_id=tier.id, text=text)
    assert caught.value.status == 422
    assert Ticket.objects.filter(tier=tier).count() == 3
    assert TicketTier.objects.get(pk=tier.pk).kind == "general"


def test_the_map_cannot_change_while_seats_are_held():
    tier = on_sale_reserved(rows=1, seats_per_row=4)
    claim_seats(tier, admit_directly(tier.event, make_customers(1))[0], ["A-1"])
    with pytest.raises(AppError):
        seat_map_generate(tier_id=tier.id, first_row="A", last_row="B", seats_per_row=2)
    assert labels(tier) == ["A-1", "A-2", "A-3", "A-4"]


def test_blocked_seats_leave_the_sale_and_come_back():
    tier = on_sale_reserved(rows=1, seats_per_row=3, max_tickets_per_customer=3)
    announced = []

    def receiver(sender, **kwargs):
        announced.append(kwargs["changes"])

    seats_changed.connect(receiver)
    try:
        assert seats_block(tier_id=tier.id, labels=["A-1", "A-2", "Z-9"]) == ["A-1", "A-2"]
        assert counter(tier) == 1
        assert announced[-1] == [
            {"label": "A-1", "status": "blocked"},
            {"label": "A-2", "status": "blocked"},
        ]
        # The last free seat sells: the event is sold out.
        claim_seats(tier, admit_directly(tier.event, make_customers(1))[0], ["A-3"])
        assert Event.objects.get(pk=tier.event_id).status == "SOLD_OUT"
        assert seats_block(tier_id=tier.id, labels=["A-2"], blocked=False) == ["A-2"]
        assert announced[-1] == [{"label": "A-2", "status": "available"}]
        assert counter(tier) == 1
        assert Event.objects.get(pk=tier.event_id).status == "ACTIVE"
        # A held seat is not blocked.
        assert seats_block(tier_id=tier.id, labels=["A-3"]) == []
    finally:
        seats_changed.disconnect(receiver)


def test_a_csv_header_is_skipped_and_blank_lines_ignored():
    seats = parse_seat_rows([["section", "row", "number"], [], ["", "B", "2"]])
    assert [(s.label, s.x, s.y) for s in seats] == [("B-2", 2.0, 1.0)]


def test_a_reserved_tiers_inventory_follows_its_seats_only():
    tier = on_sale_reserved(rows=1, seats_per_row=3)
    with pytest.raises(AppError) as caught:
        tier_update(tier_id=tier.id, name=tier.name, price=tier.price, inventory=10)
    assert caught.value.status == 422
    renamed = tier_update(tier_id=tier.id, name="Front", price=900, inventory=3)
    assert (renamed.name, renamed.price, renamed.inventory) == ("Front", 900, 3)
    assert labels(tier) == ["A-1", "A-2", "A-3"]
