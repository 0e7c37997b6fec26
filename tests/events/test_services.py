"""Event and tier services on Postgres: every transition legal and illegal,
the sale window, tier validation and ticket rows following the inventory."""

from datetime import timedelta

import pytest
from django.utils import timezone

from events import services
from events.models import Event, TicketTier
from events.services import TierSpec
from fairqueue.errors import InvalidInput, InvalidTransition, NotFound
from inventory.models import Ticket
from inventory.store import InventoryStore
from tests.support.factories import EventFactory, OrganizerFactory, TierFactory
from tests.support.sales import hold_tickets

pytestmark = pytest.mark.django_db

ALL = ["DRAFT", "ACTIVE", "PAUSED", "SOLD_OUT", "ENDED"]
TRANSITIONS = {
    # service: (legal source states, target)
    "event_activate": (["DRAFT"], "ACTIVE"),
    "event_pause": (["ACTIVE"], "PAUSED"),
    "event_resume": (["PAUSED"], "ACTIVE"),
    "event_end": (["ACTIVE", "PAUSED", "SOLD_OUT"], "ENDED"),
}
LEGAL = [(name, s) for name, (sources, _) in TRANSITIONS.items() for s in sources]
ILLEGAL = [(name, s) for name, (sources, _) in TRANSITIONS.items() for s in ALL if s not in sources]


def event_in(status: str, *, inventory: int = 2) -> Event:
    event = EventFactory(status=status)
    TierFactory(event=event, inventory=inventory)
    return Event.objects.get(pk=event.pk)


def now_plus(**kw):
    return timezone.now() + timedelta(**kw)


# --- transitions ------------------------------------------------------------------


@pytest.mark.parametrize(("service", "source"), LEGAL)
def test_legal_transition_moves_the_event(service, source, django_capture_on_commit_callbacks):
    event = event_in(source)

    with django_capture_on_commit_callbacks() as callbacks:
        returned = getattr(services, service)(event_id=event.pk)

    target = TRANSITIONS[service][1]
    assert returned.status == target
    event.refresh_from_db()
    assert event.status == target
    assert len(callbacks) >= 1  # broadcast / Redis sync / queue close, after commit only


@pytest.mark.parametrize(("service", "source"), ILLEGAL)
def test_illegal_transition_is_refused_and_changes_nothing(
    service, source, django_capture_on_commit_callbacks
):
    event = event_in(source)
    before = Event.objects.values("status", "updated_at").get(pk=event.pk)

    with django_capture_on_commit_callbacks() as callbacks, pytest.raises(InvalidTransition) as exc:
        getattr(services, service)(event_id=event.pk)

    assert exc.value.status == 409 and exc.value.code == "invalid_transition"
    assert exc.value.details == {"from": source, "to": TRANSITIONS[service][1]}
    assert Event.objects.values("status", "updated_at").get(pk=event.pk) == before
    assert callbacks == []  # no broadcast, no Redis write, no queue close


@pytest.mark.parametrize("service", sorted(TRANSITIONS))
def test_transition_of_an_unknown_event_is_404(service):
    import uuid

    with pytest.raises(NotFound):
        getattr(services, service)(event_id=uuid.uuid4())


def test_a_draft_without_tiers_cannot_go_on_sale():
    event = EventFactory(status="DRAFT")
    with pytest.raises(InvalidTransition):
        services.event_activate(event_id=event.pk)
    assert Event.objects.get(pk=event.pk).status == "DRAFT"


def test_transition_is_a_conditional_update_not_a_stale_write():
    event = event_in("ACTIVE")
    stale = Event.objects.get(pk=event.pk)  # read while ACTIVE
    services.event_end(event_id=event.pk)

    with pytest.raises(InvalidTransition) as exc:
        services.event_pause(event_id=stale.pk)

    assert exc.value.details == {"from": "ENDED", "to": "PAUSED"}
    assert Event.objects.get(pk=event.pk).status == "ENDED"


def test_activate_fills_the_redis_counters_after_commit(django_capture_on_commit_callbacks):
    event = EventFactory(status="DRAFT")
    tier = TierFactory(event=event, inventory=7)
    hold_tickets(tier, 2)

    with django_capture_on_commit_callbacks(execute=True):
        services.event_activate(event_id=event.pk)

    assert InventoryStore().available(event_id=event.pk, tier_ids=[tier.pk]) == {str(tier.pk): 5}


@pytest.mark.parametrize(
    ("status", "free", "changed"),
    [
        ("ACTIVE", False, True),
        ("ACTIVE", True, False),
        ("PAUSED", False, False),
        ("DRAFT", False, False),
        ("SOLD_OUT", False, False),
        ("ENDED", False, False),
    ],
)
def test_mark_sold_out(status, free, changed):
    event = event_in(status, inventory=2)
    hold_tickets(event.tiers.get(), 1 if free else 2)

    assert services.event_mark_sold_out(event_id=event.pk) is changed

    expected = "SOLD_OUT" if changed else status
    assert Event.objects.get(pk=event.pk).status == expected


@pytest.mark.parametrize(
    ("status", "free", "changed"),
    [
        ("SOLD_OUT", True, True),
        ("SOLD_OUT", False, False),
        ("ACTIVE", True, False),
        ("PAUSED", True, False),
        ("ENDED", True, False),
    ],
)
def test_mark_available(status, free, changed):
    event = event_in(status, inventory=2)
    hold_tickets(event.tiers.get(), 1 if free else 2)

    assert services.event_mark_available(event_id=event.pk) is changed

    expected = "ACTIVE" if changed else status
    assert Event.objects.get(pk=event.pk).status == expected


# --- creation: sale window and tiers ------------------------------------------------


def create(**overrides) -> Event:
    fields = {
        "organizer": OrganizerFactory(),
        "name": "Burna Boy",
        "sale_start": now_plus(days=1),
        "sale_end": now_plus(days=2),
        "tiers": [TierSpec("Regular", 500_000, 5), TierSpec("VIP", 2_500_000, 2)],
    }
    return services.event_create(**{**fields, **overrides})


def test_create_makes_a_draft_with_tiers_in_order_and_one_ticket_row_each():
    event = create(currency="ngn")

    assert event.status == "DRAFT"
    assert event.currency == "NGN"
    assert event.slug == "burna-boy"
    tiers = list(event.tiers.order_by("sort_order"))
    assert [(t.name, t.price, t.inventory, t.sort_order) for t in tiers] == [
        ("Regular", 500_000, 5, 0),
        ("VIP", 2_500_000, 2, 1),
    ]
    assert [Ticket.objects.filter(tier=t, claim__isnull=True).count() for t in tiers] == [5, 2]


def test_the_same_name_gets_a_distinct_slug():
    assert [create().slug, create().slug, create().slug] == [
        "burna-boy",
        "burna-boy-2",
        "burna-boy-3",
    ]


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda start: {"sale_end": start}, "sale_end"),
        (lambda start: {"sale_end": start - timedelta(hours=1)}, "sale_end"),
        (lambda start: {"prequeue_opens_at": start}, "prequeue_opens_at"),
        (lambda start: {"prequeue_opens_at": start + timedelta(minutes=1)}, "prequeue_opens_at"),
        (lambda start: {"max_tickets_per_customer": 0}, "max_tickets_per_customer"),
        (lambda start: {"admission_batch_size": 0}, "admission"),
        (lambda start: {"admission_window_seconds": 0}, "admission"),
        (lambda start: {"max_active_admitted": 0}, "admission"),
        (lambda start: {"name": "  "}, "name"),
        # Only the currencies the payment gateway (Paystack) takes.
        (lambda start: {"currency": "GBP"}, "currency"),
        (lambda start: {"currency": "XYZ"}, "currency"),
    ],
)
def test_invalid_event_is_refused_and_nothing_is_written(make, field):
    start = now_plus(days=1)
    with pytest.raises(InvalidInput) as exc:
        create(sale_start=start, **make(start))
    assert exc.value.status == 422
    assert set(exc.value.details) == {field}
    assert Event.objects.count() == 0
    assert Ticket.objects.count() == 0


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (TierSpec("Regular", 0, 5), "price"),
        (TierSpec("Regular", -100, 5), "price"),
        (TierSpec("Regular", 500, 0), "inventory"),
        (TierSpec("Regular", 500, -1), "inventory"),
        (TierSpec(" ", 500, 5), "name"),
    ],
)
def test_invalid_tier_refuses_the_whole_event(spec, field):
    with pytest.raises(InvalidInput) as exc:
        create(tiers=[TierSpec("Fine", 100, 1), spec])
    assert field in exc.value.details
    assert Event.objects.count() == 0
    assert TicketTier.objects.count() == 0
    assert Ticket.objects.count() == 0


def test_prequeue_before_the_sale_is_accepted():
    event = create(prequeue_opens_at=now_plus(hours=23))
    assert event.prequeue_opens_at < event.sale_start


def test_tier_create_refuses_a_duplicate_name_and_an_ended_event():
    event = create()
    with pytest.raises(InvalidInput):
        services.tier_create(event=event, name="VIP", price=1, inventory=1)
    Event.objects.filter(pk=event.pk).update(status="ENDED")
    event.refresh_from_db()
    with pytest.raises(InvalidTransition):
        services.tier_create(event=event, name="Late", price=1, inventory=1)
    assert event.tiers.count() == 2
    assert Ticket.objects.count() == 7


# --- tier updates: ticket rows follow the inventory ----------------------------------


def test_tier_update_adds_and_removes_free_ticket_rows():
    tier = TierFactory(inventory=5)

    services.tier_update(tier_id=tier.pk, name="Regular", price=700, inventory=8)
    assert Ticket.objects.filter(tier=tier).count() == 8

    services.tier_update(tier_id=tier.pk, name="Regular", price=700, inventory=3)
    tier.refresh_from_db()
    assert (tier.name, tier.price, tier.inventory) == ("Regular", 700, 3)
    assert Ticket.objects.filter(tier=tier).count() == 3


def test_tier_update_never_removes_held_tickets():
    tier = TierFactory(inventory=5)
    claim = hold_tickets(tier, 3)

    services.tier_update(tier_id=tier.pk, name=tier.name, price=tier.price, inventory=3)

    assert Ticket.objects.filter(tier=tier).count() == 3
    assert Ticket.objects.filter(tier=tier, claim=claim).count() == 3


def test_tier_inventory_below_the_held_tickets_is_refused_and_nothing_changes():
    tier = TierFactory(inventory=5, price=900)
    hold_tickets(tier, 3, status="CONFIRMED")

    with pytest.raises(InvalidInput) as exc:
        services.tier_update(tier_id=tier.pk, name="Renamed", price=100, inventory=2)

    assert exc.value.details == {"inventory": 2, "held": 3}
    tier.refresh_from_db()
    assert (tier.name, tier.price, tier.inventory) == (tier.name, 900, 5)
    assert tier.name != "Renamed"
    assert Ticket.objects.filter(tier=tier).count() == 5


@pytest.mark.parametrize(("price", "inventory", "name"), [(0, 5, "X"), (5, 0, "X"), (5, 5, "")])
def test_tier_update_validates_like_create(price, inventory, name):
    tier = TierFactory(inventory=5, price=900)
    with pytest.raises(InvalidInput):
        services.tier_update(tier_id=tier.pk, name=name, price=price, inventory=inventory)
    tier.refresh_from_db()
    assert (tier.price, tier.inventory) == (900, 5)


def test_tier_update_refuses_ended_events_and_duplicate_names():
    tier = TierFactory(inventory=5, name="A")
    TierFactory(event=tier.event, name="B")
    with pytest.raises(InvalidInput):
        services.tier_update(tier_id=tier.pk, name="B", price=1, inventory=5)
    Event.objects.filter(pk=tier.event_id).update(status="ENDED")
    with pytest.raises(InvalidTransition):
        services.tier_update(tier_id=tier.pk, name="A", price=1, inventory=6)
    assert Ticket.objects.filter(tier=tier).count() == 5


def test_more_inventory_takes_a_sold_out_event_back_on_sale():
    event = event_in("SOLD_OUT", inventory=2)
    tier = event.tiers.get()
    hold_tickets(tier, 2)

    services.tier_update(tier_id=tier.pk, name=tier.name, price=tier.price, inventory=4)

    assert Event.objects.get(pk=event.pk).status == "ACTIVE"


def test_cutting_the_last_free_tickets_marks_the_event_sold_out():
    event = event_in("ACTIVE", inventory=4)
    tier = event.tiers.get()
    hold_tickets(tier, 2)

    services.tier_update(tier_id=tier.pk, name=tier.name, price=tier.price, inventory=2)

    assert Event.objects.get(pk=event.pk).status == "SOLD_OUT"


# --- event updates ------------------------------------------------------------------


def test_event_update_changes_details_but_never_the_status():
    event = event_in("PAUSED")
    new_end = event.sale_end + timedelta(days=1)

    services.event_update(event_id=event.pk, name="Renamed", sale_end=new_end)

    event.refresh_from_db()
    assert (event.name, event.sale_end, event.status) == ("Renamed", new_end, "PAUSED")


@pytest.mark.parametrize("field", ["sale_end", "prequeue_opens_at"])
def test_event_update_validates_the_sale_window_and_writes_nothing(field):
    event = event_in("DRAFT")
    before = Event.objects.values().get(pk=event.pk)

    with pytest.raises(InvalidInput) as exc:
        services.event_update(event_id=event.pk, name="Renamed", **{field: event.sale_start})

    assert field in exc.value.details
    assert Event.objects.values().get(pk=event.pk) == before


def test_event_update_refuses_ended_events_unknown_fields_and_late_currency_changes():
    ended = event_in("ENDED")
    with pytest.raises(InvalidTransition):
        services.event_update(event_id=ended.pk, name="x")
    active = event_in("ACTIVE")
    with pytest.raises(InvalidTransition):
        services.event_update(event_id=active.pk, currency="usd")
    services.event_update(event_id=active.pk, currency="ngn")  # unchanged: fine
    with pytest.raises(InvalidInput) as exc:
        services.event_update(event_id=active.pk, status="ENDED", slug="x")
    assert exc.value.details == {"fields": ["slug", "status"]}
    assert Event.objects.get(pk=active.pk).status == "ACTIVE"
    assert Event.objects.get(pk=ended.pk).name != "x"


@pytest.mark.parametrize("currency", ["NGN", "ghs", "ZAR", "KES", "USD", "XOF", "EGP"])
def test_every_currency_the_gateway_takes_is_accepted(currency):
    event = create(currency=currency)
    assert event.currency == currency.upper()


def test_a_draft_cannot_move_to_a_currency_the_gateway_does_not_take():
    draft = event_in("DRAFT")
    with pytest.raises(InvalidInput) as exc:
        services.event_update(event_id=draft.pk, currency="EUR")
    assert set(exc.value.details) == {"currency"}
    assert Event.objects.get(pk=draft.pk).currency == "NGN"
