"""``manage.py create_event``: an event with its tiers (and seats) in one
command, for demos and load tests; one JSON line out."""

import json
import uuid
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from events.models import Event, Organizer, TicketTier
from inventory.models import Ticket

pytestmark = pytest.mark.django_db


def create_event(*args: str) -> dict:
    out = StringIO()
    call_command("create_event", *args, stdout=out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1  # one JSON line, nothing else on stdout
    return json.loads(lines[0])


def test_create_event_prints_one_json_line_with_the_ids():
    result = create_event(
        "--name", "Davido Live", "--tier", "Regular:500000:50", "--tier", "VIP:2500000:5"
    )

    event = Event.objects.get()
    assert result["event_id"] == str(event.pk)
    assert event.status == "DRAFT"
    assert [{k: t[k] for k in ("name", "price", "inventory")} for t in result["tiers"]] == [
        {"name": "Regular", "price": 500_000, "inventory": 50},
        {"name": "VIP", "price": 2_500_000, "inventory": 5},
    ]
    for tier in result["tiers"]:
        assert Ticket.objects.filter(tier_id=uuid.UUID(tier["id"])).count() == tier["inventory"]


def test_create_event_with_options(django_capture_on_commit_callbacks):
    result = create_event(
        "--name",
        "Burna",
        "--tier",
        "Gold: Front Row:100:3",  # a colon inside the name is fine
        "--max-per-customer",
        "2",
        "--sale-start",
        "2030-01-01T12:00:00+01:00",
        "--sale-end",
        "2030-01-02T12:00:00",
        "--organizer",
        "promoter@example.com",
        "--activate",
    )

    event = Event.objects.get(pk=result["event_id"])
    assert event.status == "ACTIVE"
    assert event.max_tickets_per_customer == 2
    assert event.sale_start.isoformat() == "2030-01-01T11:00:00+00:00"
    assert event.sale_end.isoformat() == "2030-01-02T12:00:00+00:00"  # naive = UTC
    assert [t["name"] for t in result["tiers"]] == ["Gold: Front Row"]
    organizer = Organizer.objects.get(name="promoter@example.com")
    assert event.organizer == organizer
    assert list(organizer.members.values_list("username", flat=True)) == ["promoter@example.com"]


@pytest.mark.parametrize(
    "spec", ["Regular", "Regular:500", "Regular:abc:10", "Regular:10:x", "Regular:0:10", ":5:5"]
)
def test_create_event_with_an_invalid_tier_is_a_command_error_and_creates_nothing(spec):
    with pytest.raises(CommandError):
        create_event(
            "--name", "Bad", "--tier", "Fine:100:1", "--tier", spec, "--organizer", "o@example.com"
        )
    assert Event.objects.count() == 0
    assert Organizer.objects.count() == 0
    assert get_user_model().objects.count() == 0
    assert TicketTier.objects.count() == 0
    assert Ticket.objects.count() == 0


@pytest.mark.parametrize(
    "window",
    [
        ["--sale-start", "2030-01-02T00:00:00", "--sale-end", "2030-01-01T00:00:00"],
        ["--sale-start", "not-a-date"],
    ],
)
def test_create_event_with_an_invalid_window_is_a_command_error(window):
    with pytest.raises(CommandError):
        create_event("--name", "Bad", "--tier", "Regular:100:1", *window)
    assert Event.objects.count() == 0


def test_create_event_with_a_reserved_tier_generates_its_seats():
    result = create_event(
        "--name", "Theatre", "--tier", "Standing:100:5", "--reserved-tier", "Stalls:900:3:4"
    )
    stalls = next(t for t in result["tiers"] if t["name"] == "Stalls")
    assert (stalls["kind"], stalls["inventory"], stalls["price"]) == ("reserved", 12, 900)
    seats = Ticket.objects.filter(tier_id=uuid.UUID(stalls["id"])).order_by("id")
    assert [s.label for s in seats] == [f"{r}-{n}" for r in "ABC" for n in range(1, 5)]
    assert (seats[5].row, seats[5].number, seats[5].x, seats[5].y) == ("B", 2, 2.0, 2.0)
    standing = next(t for t in result["tiers"] if t["name"] == "Standing")
    assert standing["kind"] == "general"
    assert not Ticket.objects.filter(tier_id=uuid.UUID(standing["id"]), label__isnull=False)


@pytest.mark.parametrize("spec", ["Stalls:900:3", "Stalls:900:0:4", "Stalls:900:3:x", ":9:1:1"])
def test_create_event_with_an_invalid_reserved_tier_creates_nothing(spec):
    with pytest.raises(CommandError):
        create_event("--name", "Bad", "--reserved-tier", spec, "--organizer", "o@example.com")
    assert Event.objects.count() == 0
    assert Ticket.objects.count() == 0


def test_the_demo_event_is_dated_and_has_a_seated_tier():
    """bootstrap_demo: pages, tickets and emails show the show's date, and
    the demo shows a seat map."""
    out = StringIO()
    call_command("bootstrap_demo", "--quiet", stdout=out)
    event_id = dict(line.split(" ", 1) for line in out.getvalue().splitlines())["event"]
    event = Event.objects.get(pk=event_id)
    assert event.starts_at is not None and event.starts_at > event.sale_end
    reserved = TicketTier.objects.get(event=event, kind="reserved")
    seats = Ticket.objects.filter(tier=reserved)
    assert seats.count() == reserved.inventory == 200
    assert not seats.filter(label__isnull=True).exists()  # each one a seat on the map
