"""The tenant rule (fairqueue/adminscope.py) on every page: each registered
ModelAdmin and each console URL, walked as five users who all hold every
model permission, so only the rule tells them apart:

- a superuser sees and changes everything;
- platform staff see everything and change money (payments) only;
- a member of organizer A sees and changes A's rows, and nothing platform-wide;
- a member of organizer B, the same for B;
- a staff user in no organizer sees nothing and changes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from axes.models import AccessAttempt
from django.contrib import admin
from django.contrib.auth.models import Group, Permission
from django.db.models import Model
from django.test import Client, RequestFactory
from django.utils import timezone

from claims.models import Claim, IssuedTicket, TicketReturn, TicketTransfer
from console.site import LoggedActionsMixin
from customers.models import Customer
from events.models import Event, Organizer
from fairqueue.adminscope import PLATFORM_STAFF_GROUP
from payments.models import GatewayIncident, PaymentEvent, Refund, WebhookReceipt
from payments.services.records import payment_log
from queueing.models import QueueEntry, WaitlistEntry
from tests.support.factories import CustomerFactory, OrganizerFactory, UserFactory
from tests.support.payments import payment_row
from tests.support.sales import on_sale

pytestmark = pytest.mark.django_db

PERSONAS = ("superuser", "platform staff", "member of A", "member of B", "nobody")
SEES_ALL = {"superuser", "platform staff"}
NO_ORGANIZER = "-"


@dataclass
class World:
    organizers: dict[str, Organizer]
    events: dict[str, Event]
    # label -> organizer key ("A"/"B") -> the primary keys made for it
    rows: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    users: dict[str, object] = field(default_factory=dict)

    def add(self, key: str, obj: Model, label: str | None = None) -> None:
        label = label or obj._meta.label
        self.rows.setdefault(label, {}).setdefault(key, set()).add(str(obj.pk))


def one_event(world: World, key: str) -> None:
    """An event of organizer ``key`` with a queue entry (customer who only
    queued), a claim, its payment, a refund, log entries and a receipt."""
    organizer = world.organizers[key]
    tier = on_sale(tickets=3, organizer=organizer)
    event = tier.event
    world.events[key] = event
    world.add(key, event)
    world.add(key, organizer)
    queued = CustomerFactory()
    entry = QueueEntry.objects.create(
        event=event, customer=queued, status="WAITING", score=1, joined_at=timezone.now()
    )
    on_the_list = WaitlistEntry.objects.create(event=event, customer=queued, score=1)
    payment = payment_row(reference=f"ref-{key}", amount=5000, status="CONFIRMED", tier=tier)
    claim, buyer = payment.claim, payment.customer
    refund = Refund.objects.create(
        payment=payment,
        amount=payment.amount,
        currency=payment.currency,
        requested_by="auto",
        status="PROCESSED",
        next_check_at=timezone.now(),
    )
    receipt = WebhookReceipt.objects.create(
        event_type="charge.success", reference=payment.reference, key=payment.reference,
        payment=payment,
    )  # fmt: skip
    payment_log(payment=payment, kind="WEBHOOK_RECEIVED", actor="gateway")
    world.add(key, entry)
    world.add(key, on_the_list)
    world.add(key, on_the_list, "console.WaitingListEntry")
    world.add(key, claim)
    world.add(key, claim, "console.Order")
    world.add(key, buyer, "console.Buyer")
    world.add(key, payment)
    world.add(key, refund)
    world.add(key, receipt)
    # A ticket of the purchase, returned for resale and offered to a friend.
    ticket = IssuedTicket.objects.create(
        code=f"TENANT{key}0000000000"[:16], claim=claim, event=event, tier=tier,
        customer=buyer, holder_email=buyer.email, seat=1, issued_at=timezone.now(),
    )  # fmt: skip
    returned = TicketReturn.objects.create(
        ticket=ticket, claim=claim, event=event, ticket_row=claim.tickets.first(),
        refund_amount=4000, currency="NGN",
    )  # fmt: skip
    world.add(key, returned)
    world.add(key, returned, "console.Return")
    world.add(key, TicketTransfer.objects.create(
        ticket=ticket, event=event, sender=buyer, to_email="friend@example.test",
        to_canonical="friend@example.test",
    ))  # fmt: skip
    for row in PaymentEvent.objects.filter(payment=payment):
        world.add(key, row)
    for customer in (queued, buyer):
        world.add(key, customer)


@pytest.fixture
def world() -> World:
    world = World(organizers={"A": OrganizerFactory(), "B": OrganizerFactory()}, events={})
    one_event(world, "A")
    one_event(world, "B")
    # Rows of no organizer: platform-wide.
    GatewayIncident.objects.create(operation="refund", last_seen_at=timezone.now())
    orphan = WebhookReceipt.objects.create(
        event_type="charge.success", reference="not-ours", key="x"
    )
    world.add(NO_ORGANIZER, orphan)  # a receipt of no payment of ours
    AccessAttempt.objects.create(
        username="guess", ip_address="198.51.100.1", user_agent="", failures_since_start=1
    )
    everything = Permission.objects.all()
    for persona in PERSONAS:
        user = UserFactory(password=None, is_superuser=persona == "superuser")
        if persona != "superuser":
            user.user_permissions.set(everything)
        if persona == "platform staff":
            user.groups.add(Group.objects.get_or_create(name=PLATFORM_STAFF_GROUP)[0])
        if persona.startswith("member of "):
            world.organizers[persona[-1]].members.add(user)
        world.users[persona] = user
    return world


def client_of(world: World, persona: str) -> Client:
    client = Client()
    client.force_login(world.users[persona])
    return client


def request_of(world: World, persona: str):
    request = RequestFactory().get("/admin/")
    request.user = world.users[persona]
    return request


def registered() -> list[tuple[type[Model], admin.ModelAdmin]]:
    return sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)


def expected_rows(world: World, model: type[Model], persona: str) -> set[str]:
    made = world.rows.get(model._meta.label)
    if made is None:  # platform-wide rows
        everything = {str(pk) for pk in model._default_manager.values_list("pk", flat=True)}
        return everything if persona in SEES_ALL else set()
    if persona in SEES_ALL:
        return set().union(*made.values())
    return set() if persona == "nobody" else made[persona[-1]]


def test_every_registered_page_shows_each_user_exactly_their_rows(world):
    assert len(registered()) == 27  # a new page joins this walk
    seen: dict[tuple[str, str], set[str]] = {}
    # Every sign-in first: it writes rows of its own (axes' access log).
    clients = {persona: client_of(world, persona) for persona in PERSONAS}
    for persona, client in clients.items():
        for model, _ in registered():
            opts = model._meta
            response = client.get(f"/admin/{opts.app_label}/{opts.model_name}/")
            label = opts.label
            if persona in SEES_ALL or (label in world.rows and persona != "nobody"):
                assert response.status_code == 200, (persona, label)
                seen[persona, label] = {str(row.pk) for row in response.context["cl"].result_list}
            else:
                # No row of theirs: the page is not theirs either.
                assert response.status_code == 403, (persona, label)
                seen[persona, label] = set()

    expected = {
        (persona, model._meta.label): expected_rows(world, model, persona)
        for persona in PERSONAS
        for model, _ in registered()
    }
    assert seen == expected
    # Each organizer's rows are really there and really apart.
    for label, by_organizer in world.rows.items():
        assert by_organizer["A"] and by_organizer["B"], label
        assert NO_ORGANIZER not in by_organizer or label == "payments.WebhookReceipt"
        assert not by_organizer["A"] & by_organizer["B"], label


def test_a_staff_user_in_no_organizer_sees_nothing_even_with_every_permission(world):
    client = client_of(world, "nobody")
    index = client.get("/admin/")
    assert index.status_code == 200
    assert index.context["app_list"] == []
    for model, _ in registered():
        opts = model._meta
        assert client.get(f"/admin/{opts.app_label}/{opts.model_name}/").status_code == 403


def may_change(persona: str, key: str | None, *, money: bool) -> bool:
    """What the rule grants on a row of organizer ``key`` (before the
    page's own rules, e.g. read-only)."""
    if persona == "superuser":
        return True
    if persona == "platform staff":
        return money
    return persona == f"member of {key}"


def page_alone(model_admin: admin.ModelAdmin) -> admin.ModelAdmin:
    """The ModelAdmin as its app wrote it, before the site wrapped it in the
    tenant rule: its own answers (read-only pages, an ended event, members
    that only superusers change)."""
    wrapped = type(model_admin)
    original = wrapped.__mro__[wrapped.__mro__.index(LoggedActionsMixin) + 1]
    return original(model_admin.model, admin.site)


def test_who_may_change_and_delete_each_row(world):
    """For every row of every page: the page's own answer for the user,
    narrowed by the rule."""
    for model, model_admin in registered():
        label = model._meta.label
        owners = {pk: key for key, pks in world.rows.get(label, {}).items() for pk in pks}
        alone = page_alone(model_admin)
        money = getattr(model_admin, "money", False)
        for obj in model._default_manager.all():
            key = owners.get(str(obj.pk))
            for persona in PERSONAS:
                request = request_of(world, persona)
                if label in world.rows:
                    granted = may_change(persona, key, money=money)
                else:
                    granted = persona == "superuser" or (persona == "platform staff" and money)
                for ask in ("has_change_permission", "has_delete_permission"):
                    page = getattr(alone, ask)(request_of(world, persona), obj)
                    assert getattr(model_admin, ask)(request, obj) == (page and granted), (
                        ask, persona, label, key,
                    )  # fmt: skip


def test_platform_staff_act_on_every_payment_but_on_no_event(world):
    """The rule's one difference between seeing and changing, as the
    browser meets it: payment actions are offered, event actions are not."""
    client = client_of(world, "platform staff")
    payments = client.get("/admin/payments/payment/")
    events = client.get("/admin/events/event/")
    assert "verify_with_gateway" in payments.context["action_form"].fields["action"].choices[1]
    assert events.context["action_form"] is None or [
        name for name, _ in events.context["action_form"].fields["action"].choices if name
    ] == []
    event = world.events["A"]
    refused = client.post(
        "/admin/events/event/",
        {"action": "pause_events", "_selected_action": [str(event.pk)]},
    )
    assert refused.status_code in (200, 302)
    event.refresh_from_db()
    assert event.status == "ACTIVE"


def test_an_action_runs_only_on_the_selected_rows_the_user_may_change(world):
    """A member of A who is also platform staff sees B's events; selecting
    both and pausing pauses A's only."""
    user = world.users["member of A"]
    user.groups.add(Group.objects.get_or_create(name=PLATFORM_STAFF_GROUP)[0])
    client = client_of(world, "member of A")
    a, b = world.events["A"], world.events["B"]
    response = client.post(
        "/admin/events/event/",
        {"action": "pause_events", "_selected_action": [str(a.pk), str(b.pk)]},
    )
    assert response.status_code == 302
    a.refresh_from_db()
    b.refresh_from_db()
    assert (a.status, b.status) == ("PAUSED", "ACTIVE")


# --- the console's own pages, the door and the organizer API -------------------

SEE, CHANGE = "see", "change"


def event_urls(event: Event) -> dict[str, tuple[str, str, dict | None]]:
    """name -> (what it needs, path, POST data or None for a GET)."""
    tier = event.tiers.get()
    admin_page = f"/admin/events/event/{event.pk}"
    seats = f"{admin_page}/seats/{tier.pk}/"
    return {
        "change form": (SEE, f"{admin_page}/change/", None),
        "dashboard": (SEE, f"{admin_page}/dashboard/", None),
        "dashboard data": (SEE, f"{admin_page}/dashboard/data/", None),
        "orders csv": (SEE, f"{admin_page}/orders.csv", None),
        "holders csv": (SEE, f"{admin_page}/ticket-holders.csv", None),
        "seat map": (SEE, seats, None),
        "seat map drawing": (SEE, f"{seats}map.svg", None),
        "seat map change": (CHANGE, seats, {"form": "block", "seats": "A-1", "action": "block"}),
        "door page": (CHANGE, f"/events/{event.pk}/check-in/", None),
    }


def expected_status(persona: str, key: str, needs: str, name: str) -> int:
    mine = persona == f"member of {key}"
    if persona == "superuser" or mine:
        return 302 if name == "seat map change" else 200
    if persona == "platform staff":
        if needs == SEE:
            return 200
        return 404 if name == "door page" else 403
    if name == "change form":
        # Django's own answers: no event page at all (403), or an event not
        # among yours (back to the index, as for one that does not exist).
        return 403 if persona == "nobody" else 302
    return 404  # another organizer's event, or nobody's: as if it did not exist


def test_every_console_url_answers_each_user_by_the_rule(world):
    answers, expected = {}, {}
    for persona in PERSONAS:
        client = client_of(world, persona)
        for key, event in world.events.items():
            for name, (needs, path, data) in event_urls(event).items():
                response = client.get(path) if data is None else client.post(path, data)
                answers[persona, key, name] = response.status_code
                expected[persona, key, name] = expected_status(persona, key, needs, name)
    assert answers == expected


def test_the_door_api_lets_in_only_who_runs_the_event(world):
    """POST events/{id}/tickets/check-in/ with the admin session: a code
    that is no ticket is a 404 for who runs the event, a 403 for anyone
    else (platform staff included)."""
    answers = {}
    for persona in PERSONAS:
        client = client_of(world, persona)
        for key, event in world.events.items():
            response = client.post(
                f"/api/v1/events/{event.pk}/tickets/check-in/",
                json.dumps({"code": "ABCD-EFGH-JKLM-NPQR"}),
                content_type="application/json",
            )
            answers[persona, key] = (response.status_code, response.json()["error"]["code"])
    runs = ((404, "ticket_not_found"),) * 2
    refused = ((403, "forbidden"),) * 2
    assert answers == {
        **dict(zip([("superuser", "A"), ("superuser", "B")], runs, strict=True)),
        **dict(zip([("platform staff", "A"), ("platform staff", "B")], refused, strict=True)),
        ("member of A", "A"): (404, "ticket_not_found"),
        ("member of A", "B"): (403, "forbidden"),
        ("member of B", "A"): (403, "forbidden"),
        ("member of B", "B"): (404, "ticket_not_found"),
        **dict(zip([("nobody", "A"), ("nobody", "B")], refused, strict=True)),
    }


def test_customers_an_organizer_sees_are_those_who_queued_or_claimed_for_its_events(world):
    stranger = CustomerFactory()  # signed in, never queued for A's or B's events
    client = client_of(world, "member of A")
    response = client.get("/admin/core/customer/")
    listed = {str(row.pk) for row in response.context["cl"].result_list}
    assert listed == world.rows["core.Customer"]["A"]
    assert str(stranger.pk) not in listed
    assert Customer.objects.count() == 5
    assert Claim.objects.count() == 2


def test_platform_work_is_offered_to_platform_staff_alone(world):
    """The stuck-payment tools (``platform_work``) are platform staff's: a
    member of A, holding every permission, refunds A's payments and runs
    no tool, not on A's own payments either."""
    tools = {"verify_with_gateway", "fail_and_release", "mark_refunded", "keep_tickets",
             "retry_resale_refund"}  # fmt: skip
    offered = {}
    for persona in PERSONAS:
        response = client_of(world, persona).get("/admin/payments/payment/")
        form = response.context["action_form"] if response.status_code == 200 else None
        offered[persona] = {n for n, _ in form.fields["action"].choices if n} if form else set()
    assert offered == {
        "superuser": tools | {"refund"},
        "platform staff": tools | {"refund"},
        "member of A": {"refund"},
        "member of B": {"refund"},
        "nobody": set(),
    }
    payment = Refund.objects.get(payment__claim__event=world.events["A"]).payment
    logged = PaymentEvent.objects.filter(payment=payment).count()
    client_of(world, "member of A").post(
        "/admin/payments/payment/",
        {"action": "verify_with_gateway", "_selected_action": [str(payment.pk)]},
    )
    assert PaymentEvent.objects.filter(payment=payment).count() == logged
