"""Organizer admin: scoping by organizer (lists, pages, direct URLs, actions),
event and tier saves through the services, actions refusing illegal moves
with a message, live numbers."""

from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.utils import timezone

from console.admin.forms import TierInlineForm
from customers.models import Customer
from events.domain import MAX_TIER_INVENTORY
from events.models import Event, TicketTier
from inventory.models import Ticket
from tests.support.admin import (
    ADD_URL,
    LIST_URL,
    change_url,
    event_of,
    event_post,
    messages_of,
    run_action,
)
from tests.support.factories import CustomerFactory, EventFactory, OrganizerFactory, TierFactory
from tests.support.sales import hold_tickets, organizer_login

pytestmark = pytest.mark.django_db

# --- scoping ------------------------------------------------------------------------


def test_an_organizer_lists_only_their_own_events(org_a, org_b):
    client_a, _, organizer_a = org_a
    _, _, organizer_b = org_b
    mine = event_of(organizer_a, name="Mine Concert")
    theirs = event_of(organizer_b, name="Their Concert")

    response = client_a.get(LIST_URL)

    assert response.status_code == 200
    listed = list(response.context["cl"].result_list)
    assert listed == [mine]
    assert theirs.name not in response.content.decode()
    assert organizer_b.name not in response.content.decode()  # no organizer filter leak


def test_a_member_of_two_organizers_sees_both_but_no_third(org_a):
    client_a, user, organizer_a = org_a
    second, third = OrganizerFactory(), OrganizerFactory()
    second.members.add(user)
    events = {event_of(organizer_a), event_of(second)}
    event_of(third)

    response = client_a.get(LIST_URL)

    assert set(response.context["cl"].result_list) == events


@pytest.mark.parametrize(
    ("page", "status"),
    [("change/", 302), ("history/", 302), ("delete/", 403)],  # organizers may not delete
)
def test_another_organizers_event_by_url_is_not_shown(org_a, org_b, page, status):
    client_a = org_a[0]
    theirs = event_of(org_b[2], name="Their Secret Gig", status="DRAFT")

    response = client_a.get(f"/admin/events/event/{theirs.pk}/{page}")

    assert response.status_code == status
    assert "Their Secret Gig" not in response.content.decode()
    if status == 302:
        assert response["Location"] == "/admin/"
        followed = client_a.get(response["Location"])
        assert "Their Secret Gig" not in followed.content.decode()


def test_a_superuser_is_not_redirected_from_any_event_page(superuser_client, org_b):
    theirs = event_of(org_b[2], name="Their Secret Gig", status="DRAFT")
    for page in ("change/", "history/", "delete/"):
        response = superuser_client.get(f"/admin/events/event/{theirs.pk}/{page}")
        assert response.status_code == 200
        assert "Their Secret Gig" in response.content.decode()


def test_another_organizers_event_cannot_be_changed_or_deleted_by_post(org_a, org_b):
    client_a = org_a[0]
    organizer_b = org_b[2]
    theirs = event_of(organizer_b, name="Theirs", status="DRAFT")
    tier = theirs.tiers.get()
    data = event_post(org_a[2], name="Hijacked", event=theirs, tiers=[(tier, ("Regular", 1, 1))])

    changed = client_a.post(change_url(theirs), data)
    deleted = client_a.post(f"/admin/events/event/{theirs.pk}/delete/", {"post": "yes"})

    assert changed.status_code == 302
    assert deleted.status_code == 403  # organizers have no delete permission at all
    theirs.refresh_from_db()
    assert (theirs.name, theirs.organizer) == ("Theirs", organizer_b)
    tier.refresh_from_db()
    assert (tier.price, tier.inventory) == (500_000, 10)
    assert Ticket.objects.filter(tier=tier).count() == 10


@pytest.mark.parametrize(
    ("action", "status"),
    [
        ("activate_events", "DRAFT"),
        ("pause_events", "ACTIVE"),
        ("resume_events", "PAUSED"),
        ("end_events", "ACTIVE"),
    ],
)
def test_an_organizer_cannot_act_on_another_organizers_event(org_a, org_b, action, status):
    theirs = event_of(org_b[2], status=status)

    response = run_action(org_a[0], action, theirs)

    assert response.status_code in (200, 302)
    assert Event.objects.get(pk=theirs.pk).status == status


def test_the_organizer_field_offers_only_the_users_organizers(org_a, org_b):
    client_a, _, organizer_a = org_a

    response = client_a.get(ADD_URL)

    choices = response.context["adminform"].form.fields["organizer"].queryset
    assert list(choices) == [organizer_a]


def test_creating_an_event_for_another_organizer_is_a_form_error(org_a, org_b):
    client_a = org_a[0]
    data = event_post(org_b[2], new_tiers=[("Regular", "5000", 5)])

    response = client_a.post(ADD_URL, data)

    assert response.status_code == 200
    assert "organizer" in response.context["adminform"].form.errors
    assert Event.objects.count() == 0


def test_a_staff_user_without_organizer_sees_nothing_and_cannot_add(org_b):
    client, user, organizer = organizer_login(username="loner")
    organizer.members.remove(user)
    event_of(org_b[2])

    assert client.get(LIST_URL).status_code == 403  # no event is theirs: no page either
    assert client.get(ADD_URL).status_code == 403


def test_a_superuser_sees_and_opens_every_event(superuser_client, org_a, org_b):
    a, b = event_of(org_a[2], name="Gig A"), event_of(org_b[2], name="Gig B")

    response = superuser_client.get(LIST_URL)

    assert set(response.context["cl"].result_list) == {a, b}
    page = superuser_client.get(change_url(b))
    assert page.status_code == 200
    assert "Gig B" in page.content.decode()


def test_the_tier_inline_is_scoped_too(org_a, org_b):
    client_a, _, organizer_a = org_a
    mine = event_of(organizer_a)
    event_of(org_b[2])

    response = client_a.get(change_url(mine))

    [inline] = response.context["inline_admin_formsets"]
    assert [f.instance for f in inline.formset.forms] == list(mine.tiers.all())


# --- creating and editing through the services ---------------------------------------


def test_an_organizer_creates_an_event_with_tiers_and_ticket_rows(org_a):
    client_a, _, organizer_a = org_a
    data = event_post(organizer_a, new_tiers=[("Regular", "5000", 50), ("VIP", "20000.50", 5)])

    response = client_a.post(ADD_URL, data)

    assert response.status_code == 302, (
        response.context and response.context["adminform"].form.errors
    )
    event = Event.objects.get()
    assert (event.organizer, event.name, event.status, event.slug) == (
        organizer_a,
        "Wizkid Live",
        "DRAFT",
        "wizkid-live",
    )
    assert event.max_tickets_per_customer == 2
    tiers = {t.name: t for t in event.tiers.all()}
    assert {n: (t.price, t.inventory) for n, t in tiers.items()} == {
        "Regular": (500_000, 50),
        "VIP": (2_000_050, 5),
    }
    assert Ticket.objects.filter(tier=tiers["Regular"]).count() == 50
    assert Ticket.objects.filter(tier=tiers["VIP"]).count() == 5


@pytest.mark.parametrize(
    ("window", "field"),
    [
        (lambda s: {"end": s}, "sale_end"),
        (lambda s: {"end": s - timedelta(hours=1)}, "sale_end"),
        (lambda s: {"prequeue": s}, "prequeue_opens_at"),
        (lambda s: {"prequeue": s + timedelta(minutes=5)}, "prequeue_opens_at"),
    ],
)
def test_a_bad_sale_window_is_a_form_error_and_nothing_is_created(org_a, window, field):
    client_a, _, organizer_a = org_a
    start = (timezone.now() + timedelta(days=1)).replace(microsecond=0)
    data = event_post(organizer_a, start=start, new_tiers=[("Regular", 1, 1)], **window(start))

    response = client_a.post(ADD_URL, data)

    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    assert Event.objects.count() == 0
    assert TicketTier.objects.count() == 0


@pytest.mark.parametrize(
    ("tier", "field"),
    [(("Regular", 0, 5), "price"), (("Regular", 5, 0), "inventory"), (("", 5, 5), "name")],
)
def test_a_bad_tier_is_a_form_error_and_nothing_is_created(org_a, tier, field):
    client_a, _, organizer_a = org_a

    response = client_a.post(ADD_URL, event_post(organizer_a, new_tiers=[tier]))

    assert response.status_code == 200
    [inline] = response.context["inline_admin_formsets"]
    assert field in inline.formset.forms[0].errors
    assert Event.objects.count() == 0


def test_editing_a_tier_moves_its_ticket_rows(org_a):
    client_a, _, organizer_a = org_a
    event = event_of(organizer_a, status="ACTIVE", inventory=10)
    tier = event.tiers.get()

    response = client_a.post(
        change_url(event),
        event_post(organizer_a, event=event, tiers=[(tier, ("Regular", "6000", 14))]),
    )

    assert response.status_code == 302
    tier.refresh_from_db()
    assert (tier.price, tier.inventory) == (600_000, 14)
    assert Ticket.objects.filter(tier=tier).count() == 14


def test_inventory_below_the_held_tickets_is_a_form_error_and_nothing_changes(org_a):
    client_a, _, organizer_a = org_a
    event = event_of(organizer_a, status="ACTIVE", inventory=10)
    tier = event.tiers.get()
    hold_tickets(tier, 4, status="CONFIRMED")

    response = client_a.post(
        change_url(event),
        event_post(organizer_a, name="Renamed", event=event, tiers=[(tier, ("Regular", 1, 3))]),
    )

    assert response.status_code == 200
    [inline] = response.context["inline_admin_formsets"]
    assert "inventory" in inline.formset.forms[0].errors
    tier.refresh_from_db()
    assert (tier.price, tier.inventory) == (500_000, 10)
    assert Ticket.objects.filter(tier=tier).count() == 10
    assert Event.objects.get(pk=event.pk).name != "Renamed"


def test_a_refusal_from_the_service_is_a_message_and_rolls_back_everything(org_a, monkeypatch):
    """The form saw enough free tickets, but by the time the service runs they
    are held (another claim got there first): message, nothing saved."""
    client_a, _, organizer_a = org_a
    event = event_of(organizer_a, status="ACTIVE", inventory=10)
    tier = event.tiers.get()
    data = event_post(organizer_a, name="Renamed", event=event, tiers=[(tier, ("Regular", 1, 3))])

    original = TierInlineForm.clean_inventory

    def clean_then_claims_arrive(form):
        value = original(form)
        hold_tickets(tier, 4)  # a concurrent claim, between validation and save
        return value

    monkeypatch.setattr(TierInlineForm, "clean_inventory", clean_then_claims_arrive)
    response = client_a.post(change_url(event), data)

    assert response.status_code == 302
    assert response["Location"] == change_url(event)
    assert any("cannot go below" in m for m in messages_of(response))
    tier.refresh_from_db()
    assert (tier.price, tier.inventory) == (500_000, 10)
    assert Ticket.objects.filter(tier=tier).count() == 10
    assert Event.objects.get(pk=event.pk).name != "Renamed"


def test_editing_the_sale_window_is_validated(org_a):
    client_a, _, organizer_a = org_a
    event = event_of(organizer_a, status="ACTIVE")
    tier = event.tiers.get()
    start = event.sale_start.replace(microsecond=0)
    data = event_post(
        organizer_a, event=event, start=start, end=start, tiers=[(tier, ("Regular", "5000", 10))]
    )

    response = client_a.post(change_url(event), data)

    assert response.status_code == 200
    assert "sale_end" in response.context["adminform"].form.errors
    assert Event.objects.get(pk=event.pk).sale_end == event.sale_end


def test_status_is_read_only_in_the_form(org_a):
    client_a, _, organizer_a = org_a
    event = event_of(organizer_a, status="ACTIVE")
    tier = event.tiers.get()
    data = event_post(organizer_a, event=event, tiers=[(tier, ("Regular", "5000", 10))])
    data["status"] = "ENDED"

    assert client_a.post(change_url(event), data).status_code == 302
    assert Event.objects.get(pk=event.pk).status == "ACTIVE"


def test_an_ended_event_is_read_only(org_a):
    client_a, _, organizer_a = org_a
    event = event_of(organizer_a, status="ENDED", name="Over")
    tier = event.tiers.get()

    page = client_a.get(change_url(event))
    post = client_a.post(
        change_url(event),
        event_post(organizer_a, name="Changed", event=event, tiers=[(tier, ("Regular", 1, 1))]),
    )

    assert page.status_code == 200
    assert page.context["has_change_permission"] is False
    assert post.status_code == 403
    assert Event.objects.get(pk=event.pk).name == "Over"
    assert Ticket.objects.filter(tier=tier).count() == 10


def test_only_a_draft_can_be_deleted(superuser_client, org_a):
    draft = event_of(org_a[2], status="DRAFT")
    live = event_of(org_a[2], status="ACTIVE")

    assert superuser_client.get(f"/admin/events/event/{live.pk}/delete/").status_code == 403
    response = superuser_client.post(f"/admin/events/event/{draft.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert list(Event.objects.all()) == [live]
    choices = superuser_client.get(LIST_URL).context["action_form"].fields["action"].choices
    assert "delete_selected" not in [value for value, _ in choices]


# --- actions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "source", "target"),
    [
        ("activate_events", "DRAFT", "ACTIVE"),
        ("pause_events", "ACTIVE", "PAUSED"),
        ("resume_events", "PAUSED", "ACTIVE"),
        ("end_events", "ACTIVE", "ENDED"),
        ("end_events", "PAUSED", "ENDED"),
        ("end_events", "SOLD_OUT", "ENDED"),
    ],
)
def test_actions_call_the_services(org_a, action, source, target):
    client_a, _, organizer_a = org_a
    event = event_of(organizer_a, status=source, name="The Gig")

    response = run_action(client_a, action, event)

    assert response.status_code == 302
    assert Event.objects.get(pk=event.pk).status == target
    [message] = messages_of(response)
    assert "“The Gig”" in message


@pytest.mark.parametrize(
    ("action", "source"),
    [
        ("activate_events", "ACTIVE"),
        ("activate_events", "PAUSED"),
        ("activate_events", "SOLD_OUT"),
        ("activate_events", "ENDED"),
        ("pause_events", "DRAFT"),
        ("pause_events", "PAUSED"),
        ("pause_events", "SOLD_OUT"),
        ("pause_events", "ENDED"),
        ("resume_events", "DRAFT"),
        ("resume_events", "ACTIVE"),
        ("resume_events", "SOLD_OUT"),
        ("resume_events", "ENDED"),
        ("end_events", "DRAFT"),
        ("end_events", "ENDED"),
    ],
)
def test_illegal_actions_show_an_error_message_and_change_nothing(org_a, action, source):
    client_a, _, organizer_a = org_a
    event = event_of(organizer_a, status=source, name="The Gig")

    response = run_action(client_a, action, event)

    assert response.status_code == 302
    assert Event.objects.get(pk=event.pk).status == source
    [message] = list(get_messages(response.wsgi_request))
    assert message.level_tag == "error"
    assert str(message).startswith("“The Gig”: ")
    assert f"from {source}" in str(message) or "Only a" in str(message)


def test_an_action_on_a_mixed_selection_changes_the_legal_ones_and_reports_the_rest(org_a):
    client_a, _, organizer_a = org_a
    live = event_of(organizer_a, status="ACTIVE", name="Live")
    draft = event_of(organizer_a, status="DRAFT", name="Draft")

    response = run_action(client_a, "pause_events", live, draft)

    assert Event.objects.get(pk=live.pk).status == "PAUSED"
    assert Event.objects.get(pk=draft.pk).status == "DRAFT"
    levels = sorted((m.level_tag, str(m)[:8]) for m in get_messages(response.wsgi_request))
    assert levels == [("error", "“Draft”:"), ("success", "Paused: ")]


def test_activating_a_draft_without_tiers_is_a_message(org_a):
    client_a, _, organizer_a = org_a
    empty = EventFactory(organizer=organizer_a, status="DRAFT")

    response = run_action(client_a, "activate_events", empty)

    assert Event.objects.get(pk=empty.pk).status == "DRAFT"
    [message] = messages_of(response)
    assert "at least one ticket tier" in message


# --- live numbers -------------------------------------------------------------------


def test_live_numbers_on_the_change_page_and_the_list(org_a):
    client_a, _, organizer_a = org_a
    event = event_of(organizer_a, status="ACTIVE", inventory=10)
    regular = event.tiers.get()
    vip = TierFactory(event=event, name="VIP", inventory=5, price=900_000)
    hold_tickets(regular, 2, status="CLAIMED")
    hold_tickets(regular, 3, status="CONFIRMED")
    hold_tickets(vip, 1, status="CONFIRMED")

    page = client_a.get(change_url(event)).content.decode()

    assert "<tr><td>Regular</td><td>10</td><td>3</td><td>2</td><td>5</td></tr>" in page
    assert "<tr><td>VIP</td><td>5</td><td>1</td><td>0</td><td>4</td></tr>" in page
    assert "<th>total</th><th>15</th><th>4</th><th>2</th><th>9</th>" in page
    assert "Status: <strong>Active</strong>" in page

    [row] = client_a.get(LIST_URL).context["cl"].result_list
    assert (row.tickets_sold_n, row.tickets_free_n) == (4, 9)


# --- customers and organizers ----------------------------------------------------------


def test_customers_are_read_only_for_staff_and_hidden_from_organizers(superuser_client, org_a):
    customer = CustomerFactory(email="buyer@example.com")

    assert superuser_client.get("/admin/core/customer/").status_code == 200
    page = superuser_client.get(f"/admin/core/customer/{customer.pk}/change/")
    assert page.status_code == 200 and page.context["has_change_permission"] is False
    assert superuser_client.get("/admin/core/customer/add/").status_code == 403
    superuser_client.post(f"/admin/core/customer/{customer.pk}/change/", {"email": "x@y.z"})
    assert Customer.objects.get().email == "buyer@example.com"

    assert org_a[0].get("/admin/core/customer/").status_code == 403


def test_a_page_an_organizer_may_not_open_says_so_inside_the_console(org_a):
    client_a, user, _ = org_a

    refused = client_a.get("/admin/core/customer/")

    assert refused.status_code == 403
    page = refused.content.decode()
    assert "You cannot open this page" in page
    assert user.get_username() in page
    assert 'href="/admin/">Back to the console</a>' in page


def test_organizers_are_managed_by_superusers_only(superuser_client, org_a):
    client_a, user, organizer_a = org_a
    assert superuser_client.get("/admin/events/organizer/").status_code == 200
    assert client_a.get(f"/admin/events/organizer/{organizer_a.pk}/change/").status_code in (
        302,
        403,
    )
    assert list(organizer_a.members.all()) == [user]


def test_the_add_page_shows_no_numbers_for_the_unsaved_event(org_a):
    client_a = org_a[0]

    response = client_a.get(ADD_URL)

    assert response.status_code == 200
    [inline] = response.context["inline_admin_formsets"]
    row = next(iter(inline))  # the one empty tier row
    readonly = [
        str(field.contents())
        for fieldset in row
        for line in fieldset
        for field in line
        if field.is_readonly
    ]
    assert readonly == ["-", "-", "-", "-"]  # sold, claimed, free, seats


def test_the_tier_form_says_the_inventory_cap_and_how_long_it_takes_and_refuses_more(org_a):
    client_a, _, organizer_a = org_a

    form_page = client_a.get(ADD_URL)
    refused = client_a.post(ADD_URL, event_post(organizer_a, new_tiers=[("Huge", 5, 500_000)]))

    assert f"{MAX_TIER_INVENTORY:,}" in form_page.content.decode()
    assert "second" in form_page.content.decode()  # how long the largest tier takes
    assert refused.status_code == 200
    [inline] = refused.context["inline_admin_formsets"]
    assert f"{MAX_TIER_INVENTORY:,}" in str(inline.formset.forms[0].errors["inventory"])
    assert Event.objects.count() == 0
    assert Ticket.objects.count() == 0
