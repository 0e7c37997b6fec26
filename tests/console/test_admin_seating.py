"""The seat map in the console: drawn with held and sold seats, generated,
imported, seats blocked; only the event's organizer sees or changes it."""

from __future__ import annotations

import pytest

from events.models import TicketTier
from inventory.models import Ticket
from tests.support.admin import change_url, event_of, messages_of, page_forms
from tests.support.sales import hold_tickets

pytestmark = pytest.mark.django_db(transaction=True)


def seats_url(tier) -> str:
    return f"/admin/events/event/{tier.event_id}/seats/{tier.pk}/"


@pytest.fixture
def tier(org_a):
    organizer = org_a[2]
    event = event_of(organizer, inventory=4)
    return event.tiers.get()


def test_an_organizer_turns_a_tier_into_rows_of_seats_and_sees_them(org_a, tier):
    client = org_a[0]
    page = client.get(change_url(tier.event))
    assert seats_url(tier) in page.content.decode()
    grid = {"form": "generate", "first_row": "A", "last_row": "T", "seats_per_row": "30"}
    asked = client.post(seats_url(tier), grid)
    # Asked first, saying by how much the inventory changes; nothing changed yet.
    assert asked.status_code == 200
    words = " ".join(asked.content.decode().split())
    assert (
        "Replace every seat of Regular with 600 seats (rows A to T, 30 seats each)?" in words
    )
    assert "The tier's inventory goes from 4 to 600 tickets (+596)." in words
    assert TicketTier.objects.get(pk=tier.pk).inventory == 4
    (confirm,) = [f for f in page_forms(asked.content.decode()) if f.get("confirm")]
    response = client.post(seats_url(tier), confirm)
    assert response.status_code == 302
    assert messages_of(response) == ["The seat map now has 600 seats."]
    tier.refresh_from_db()
    assert (tier.kind, tier.inventory) == ("reserved", 600)
    page = client.get(seats_url(tier)).content.decode()
    assert page.count('<circle class="seat available"') == 600
    assert "600 available" in page


def test_held_and_sold_seats_are_drawn(org_a, tier):
    client = org_a[0]
    client.post(
        seats_url(tier),
        {"form": "generate", "first_row": "A", "last_row": "B", "seats_per_row": "5",
         "confirm": "1"},
    )
    tier.refresh_from_db()
    hold_tickets(tier, 2, status="CLAIMED")
    hold_tickets(tier, 1, status="CONFIRMED")
    svg = client.get(seats_url(tier) + "map.svg")
    assert svg["Content-Type"] == "image/svg+xml"
    body = svg.content.decode()
    assert body.count("seat held") == 2
    assert body.count("seat sold") == 1
    assert body.count("seat available") == 7


def test_a_csv_import_and_blocking_seats(org_a, tier):
    client = org_a[0]
    csv_text = "section,row,number,x,y,flags\n,A,1,1,1,\n,A,2,2,1,accessible\n,A,3,3,1,\n"
    response = client.post(seats_url(tier), {"form": "import", "csv_text": csv_text})
    assert messages_of(response) == ["Imported 3 seats."]
    response = client.post(
        seats_url(tier), {"form": "block", "seats": "A-1, A-3", "action": "block"}
    )
    assert messages_of(response)[-1] == "Blocked 2 of 2 seats: A-1, A-3"
    assert sorted(
        Ticket.objects.filter(tier=tier, blocked=True).values_list("label", flat=True)
    ) == ["A-1", "A-3"]
    assert client.get(seats_url(tier) + "map.svg").content.decode().count("seat blocked") == 2
    response = client.post(seats_url(tier), {"form": "block", "seats": "A-3", "action": "unblock"})
    assert messages_of(response)[-1] == "Unblocked 1 of 1 seats: A-3"


def test_a_seat_is_blocked_through_the_page_as_a_browser_posts_it(org_a, tier):
    """The page's own block form, with the fields it renders, blocks a seat."""
    client = org_a[0]
    client.post(seats_url(tier), {"form": "import", "csv_text": ",A,1\n,A,2\n"})
    forms = page_forms(client.get(seats_url(tier)).content.decode())
    (block,) = [f for f in forms if f.get("form") == "block"]
    assert {"seats", "action"} <= set(block)
    response = client.post(seats_url(tier), {**block, "seats": "A-2"})
    assert messages_of(response)[-1] == "Blocked 1 of 1 seats: A-2"
    assert list(Ticket.objects.filter(tier=tier, blocked=True).values_list("label", flat=True)) == [
        "A-2"
    ]


def test_a_bad_csv_is_a_message_and_changes_nothing(org_a, tier):
    client = org_a[0]
    response = client.post(seats_url(tier), {"form": "import", "csv_text": "A,1\n"})
    assert messages_of(response)[0].startswith("Nothing was changed: The CSV is not valid")
    assert TicketTier.objects.get(pk=tier.pk).kind == "general"
    assert Ticket.objects.filter(tier=tier).count() == 4


def test_another_organizer_sees_nothing(org_b, tier):
    client = org_b[0]
    assert client.get(seats_url(tier)).status_code == 404
    response = client.post(
        seats_url(tier),
        {"form": "generate", "first_row": "A", "last_row": "B", "seats_per_row": "2",
         "confirm": "1"},
    )
    assert response.status_code == 404
    assert TicketTier.objects.get(pk=tier.pk).kind == "general"


def test_the_generator_starts_from_the_rows_the_tier_has(org_a, tier):
    client = org_a[0]
    client.post(
        seats_url(tier),
        {"form": "generate", "first_row": "C", "last_row": "H", "seats_per_row": "12",
         "section": "Stalls", "confirm": "1"},
    )  # fmt: skip

    (form,) = [f for f in page_forms(client.get(seats_url(tier)).content.decode())
               if f.get("form") == "generate"]  # fmt: skip

    assert (form["first_row"], form["last_row"], form["seats_per_row"], form["section"]) == (
        "C", "H", "12", "Stalls",
    )  # fmt: skip
    # The same grid again changes nothing in the inventory, and says so.
    asked = client.post(seats_url(tier), form)
    assert "The tier's inventory stays at 72 tickets." in " ".join(asked.content.decode().split())
