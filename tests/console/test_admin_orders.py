"""Orders and buyers for the organizer: scoped lists with search, money in
major units, CSV exports of orders and ticket holders, releasing unpaid
orders through the services; and the staff claims and queue pages readable."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages

from claims.domain import ticket_code_display
from claims.models import Claim
from claims.services import issued_ticket_check_in, issued_tickets_issue
from inventory.models import Ticket
from tests.support.admin import event_of
from tests.support.factories import CustomerFactory, TierFactory
from tests.support.sales import hold_tickets, join, make_event, organizer_login, pay

pytestmark = pytest.mark.django_db

ORDERS = "/admin/console/order/"
BUYERS = "/admin/console/buyer/"


def rows(response) -> list[dict[str, str]]:
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def order_for(tier, email: str, *, status: str = "CONFIRMED", quantity: int = 1) -> Claim:
    claim = hold_tickets(tier, quantity, status=status)
    claim.customer.email = email
    claim.customer.save()
    return claim


@pytest.fixture
def shop(org_a, org_b):
    client, _, organizer = org_a
    event = event_of(organizer, name="Mine", inventory=10)
    tier = event.tiers.get()
    paid = order_for(tier, "ada@example.test", quantity=2)
    unpaid = order_for(tier, "bola@example.test", status="CLAIMED")
    theirs = order_for(event_of(org_b[2], name="Theirs").tiers.get(), "zed@example.test")
    return client, event, tier, paid, unpaid, theirs


def test_the_orders_list_is_scoped_and_readable(shop):
    client, _, _, paid, unpaid, theirs = shop

    response = client.get(ORDERS)

    assert response.status_code == 200
    assert {o.pk for o in response.context["cl"].result_list} == {paid.pk, unpaid.pk}
    page = response.content.decode()
    assert "NGN 10,000.00" in page and "NGN 5,000.00" in page  # 2 x and 1 x NGN 5,000
    assert "awaiting payment" in page and ">paid<" in page
    assert "zed@example.test" not in page and str(theirs.pk)[:8] not in page


def test_orders_are_found_by_email_and_payment_reference(shop):
    client, _, _, paid, unpaid, theirs = shop
    payment = pay(unpaid)
    pay(theirs)

    by_email = client.get(ORDERS, {"q": "ada@"}).context["cl"].result_list
    by_reference = client.get(ORDERS, {"q": payment.reference}).context["cl"].result_list
    other = client.get(ORDERS, {"q": "zed@example.test"}).context["cl"].result_list

    assert [o.pk for o in by_email] == [paid.pk]
    assert [o.pk for o in by_reference] == [unpaid.pk]
    assert list(other) == []


def test_the_buyers_list_counts_only_the_organizers_orders(shop):
    client, _, _, paid, _, theirs = shop
    # Ada also bought from the other organizer: that order is not counted here.
    other_tier = theirs.tier
    second = hold_tickets(other_tier, 1, status="CONFIRMED")
    Claim.objects.filter(pk=second.pk).update(customer=paid.customer)

    response = client.get(BUYERS)

    listed = {b.email: (b.orders_n, b.tickets_n or 0) for b in response.context["cl"].result_list}
    assert listed == {"ada@example.test": (1, 2), "bola@example.test": (1, 0)}
    assert client.get(BUYERS, {"q": "bola"}).context["cl"].result_list[0].email == (
        "bola@example.test"
    )
    assert client.get(f"{BUYERS}{theirs.customer_id}/change/").status_code == 302


def test_the_orders_csv_of_an_event(shop):
    client, event, _, paid, unpaid, _ = shop
    payment = pay(paid, status="CONFIRMED")

    exported = rows(client.get(f"/admin/events/event/{event.pk}/orders.csv"))

    assert [(r["order"], r["status"], r["amount"], r["buyer_email"]) for r in exported] == [
        (str(paid.pk), "CONFIRMED", "10000.00", "ada@example.test"),
        (str(unpaid.pk), "CLAIMED", "5000.00", "bola@example.test"),
    ]
    assert exported[0]["payment_reference"] == payment.reference
    assert (exported[0]["tier"], exported[0]["quantity"], exported[0]["currency"]) == (
        "Regular",
        "2",
        "NGN",
    )


def test_the_ticket_holders_csv_lists_each_paid_ticket_by_its_printed_code(shop):
    client, event, _, paid, _, _ = shop
    first, second = issued_tickets_issue(claim_id=paid.pk)
    issued_ticket_check_in(event_id=event.pk, code=first.code, actor="staff:door1")

    exported = rows(client.get(f"/admin/events/event/{event.pk}/ticket-holders.csv"))

    assert [
        (r["ticket"], r["seat"], r["status"], r["checked_in_by"], bool(r["checked_in_at"]))
        for r in exported
    ] == [
        (ticket_code_display(first.code), "1 of 2", "USED", "door1", True),
        (ticket_code_display(second.code), "2 of 2", "VALID", "", False),
    ]
    assert {(r["holder_email"], r["order"], r["event"]) for r in exported} == {
        ("ada@example.test", str(paid.pk), "Mine")
    }


def test_an_order_page_is_titled_for_a_person_and_lists_its_ticket_codes(shop):
    client, _, _, paid, _, _ = shop
    tickets = issued_tickets_issue(claim_id=paid.pk)

    page = client.get(f"{ORDERS}{paid.pk}/change/").content.decode()

    assert "Mine · 2 x Regular · ada@example.test · paid" in page
    assert str(paid.tier_id) not in page
    for ticket in tickets:
        assert f"/tickets/{ticket.code}/" in page
        assert ticket_code_display(ticket.code) in page
    assert page.count("not checked in") == 2


def test_an_organizer_follows_an_orders_payments_link_to_their_own_payments_only(
    shop, superuser_client
):
    client, _, _, paid, _, theirs = shop
    payment = pay(paid, status="CONFIRMED")
    other = pay(theirs, status="CONFIRMED")
    link = f"/admin/payments/payment/?claim__id__exact={paid.pk}"

    page = client.get(f"{ORDERS}{paid.pk}/change/").content.decode()
    payments = client.get("/admin/payments/payment/")

    assert link in page
    assert [p.pk for p in payments.context["cl"].result_list] == [payment.pk]
    assert client.get(f"/admin/payments/payment/{other.pk}/change/").status_code == 302
    assert link in superuser_client.get(f"{ORDERS}{paid.pk}/change/").content.decode()


def test_a_user_who_may_not_open_the_payments_reads_them_without_a_link(shop, org_a):
    client, _, _, paid, _, _ = shop
    user = org_a[1]
    payment = pay(paid, status="CONFIRMED")
    link = f"/admin/payments/payment/?claim__id__exact={paid.pk}"
    group = user.groups.get()
    group.permissions.remove(*Permission.objects.filter(content_type__app_label="payments"))

    page = client.get(f"{ORDERS}{paid.pk}/change/").content.decode()
    listed = client.get(ORDERS).content.decode()

    assert link not in page and link not in listed
    assert f"<code>{payment.reference}</code> · Confirmed · NGN 10,000.00" in page
    assert payment.reference in listed
    assert client.get(link).status_code == 403  # why it is not shown


def test_refunding_a_ticket_already_checked_in_warns_before_it_is_done(shop, superuser_client):
    _, event, _, paid, unpaid, _ = shop
    payment = pay(paid, status="CONFIRMED")
    first, _ = issued_tickets_issue(claim_id=paid.pk)
    issued_ticket_check_in(event_id=event.pk, code=first.code, actor="staff:door1")
    other = pay(unpaid, status="CONFIRMED")
    payments = "/admin/payments/payment/"

    page = superuser_client.post(
        payments, {"action": "refund", "_selected_action": [str(payment.pk), str(other.pk)]}
    ).content.decode()
    clean = superuser_client.post(
        payments, {"action": "refund", "_selected_action": [str(other.pk)]}
    ).content.decode()

    assert "Already at the door: 1 ticket below was checked in." in page
    assert f"<code>{ticket_code_display(first.code)}</code> (ada@example.test" in page
    assert 'value="Refund, although checked in"' in page
    assert "Already at the door" not in clean and 'value="Refund"' in clean
    assert Claim.objects.get(pk=paid.pk).status == "CONFIRMED"  # nothing done yet


def test_a_cell_a_spreadsheet_would_run_is_defused(org_a):
    client, _, organizer = org_a
    event = event_of(organizer)
    order_for(event.tiers.get(), "=HYPERLINK(1)@example.test")

    [row] = rows(client.get(f"/admin/events/event/{event.pk}/orders.csv"))

    assert row["buyer_email"] == "'=HYPERLINK(1)@example.test"


def test_another_organizers_exports_are_not_found(shop, org_a):
    client = org_a[0]
    theirs = shop[5]
    for name in ("orders.csv", "ticket-holders.csv"):
        response = client.get(f"/admin/events/event/{theirs.event_id}/{name}")
        assert response.status_code == 404


def test_export_actions_on_selected_orders(shop):
    client, _, _, paid, unpaid, _ = shop
    issued_tickets_issue(claim_id=paid.pk)

    orders = rows(
        client.post(ORDERS, {"action": "export_orders", "_selected_action": [str(unpaid.pk)]})
    )
    holders = rows(
        client.post(
            ORDERS,
            {"action": "export_holders", "_selected_action": [str(paid.pk), str(unpaid.pk)]},
        )
    )

    assert [r["order"] for r in orders] == [str(unpaid.pk)]
    assert [r["order"] for r in holders] == [str(paid.pk), str(paid.pk)]


# --- releasing unpaid orders ---------------------------------------------------------


def release(client, *orders):
    return client.post(
        ORDERS, {"action": "release_unpaid", "_selected_action": [str(o.pk) for o in orders]}
    )


def test_releasing_unpaid_orders_gives_their_tickets_back_and_refuses_the_rest(shop):
    client, _, tier, paid, unpaid, _ = shop
    paying = order_for(tier, "cleo@example.test", status="CLAIMED")
    pay(paying)  # a payment in flight: the customer may be paying right now

    response = release(client, paid, unpaid, paying)

    assert Claim.objects.get(pk=unpaid.pk).status == "RELEASED"
    assert Claim.objects.get(pk=unpaid.pk).release_reason == "staff"
    assert Ticket.objects.filter(claim=unpaid).count() == 0
    assert Claim.objects.get(pk=paid.pk).status == "CONFIRMED"
    assert Ticket.objects.filter(claim=paid).count() == 2
    assert Claim.objects.get(pk=paying.pk).status == "CLAIMED"
    assert Ticket.objects.filter(claim=paying).count() == 1
    messages = [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]
    assert len(messages) == 3
    assert set(messages) == {
        ("success", "Released 1 order(s)."),
        ("warning", f"{str(paid.pk)[:8]}: A CONFIRMED order cannot be released."),
        (
            "warning",
            f"{str(paying.pk)[:8]}: A payment for this order is in flight; it can be "
            "released once that payment has failed or expired.",
        ),
    }


def test_another_organizers_orders_cannot_be_released(shop, org_a):
    theirs = shop[5]
    Claim.objects.filter(pk=theirs.pk).update(status="CLAIMED")

    release(org_a[0], theirs)

    assert Claim.objects.get(pk=theirs.pk).status == "CLAIMED"


def test_without_the_change_permission_there_is_no_release_action(shop):
    event = shop[1]
    client, user, _ = organizer_login(event.organizer, username="viewer")
    user.groups.clear()
    user.user_permissions.add(Permission.objects.get(codename="view_order"))
    unpaid = shop[4]

    response = client.get(ORDERS)
    choices = [v for v, _ in response.context["action_form"].fields["action"].choices]
    release(client, unpaid)

    assert "release_unpaid" not in choices and "export_orders" in choices
    assert Claim.objects.get(pk=unpaid.pk).status == "CLAIMED"


# --- the staff pages of claims and queue entries ------------------------------------


def test_the_claims_page_shows_money_and_links(superuser_client):
    customer = CustomerFactory(email="ada@example.test")
    tier = TierFactory(price=1_234_500)
    claim = hold_tickets(tier, 1, status="CLAIMED")
    Claim.objects.filter(pk=claim.pk).update(customer=customer, payment_in_flight=True)

    listing = superuser_client.get("/admin/claims/claim/").content.decode()
    page = superuser_client.get(f"/admin/claims/claim/{claim.pk}/change/").content.decode()

    assert "NGN 12,345.00" in listing
    assert f'href="/admin/core/customer/{customer.pk}/change/"' in listing
    assert f'href="/admin/events/event/{tier.event_id}/change/"' in listing
    assert f"/admin/payments/payment/?claim__id__exact={claim.pk}" in page
    assert "expiry waits for the gateway" in page


def test_the_queue_page_links_customer_and_event(superuser_client):
    event = make_event()
    customer, _ = join(event)

    listing = superuser_client.get("/admin/queueing/queueentry/").content.decode()

    assert f'href="/admin/core/customer/{customer.pk}/change/"' in listing
    assert f'href="/admin/events/event/{event.pk}/change/"' in listing
    assert "in line" in listing


def test_an_order_shows_only_the_times_that_apply_to_it(shop):
    client, _, _, paid, unpaid, _ = shop
    Claim.objects.filter(pk=paid.pk).update(confirmed_at=paid.created_at)

    paid_page = client.get(f"{ORDERS}{paid.pk}/change/").content.decode()
    unpaid_page = client.get(f"{ORDERS}{unpaid.pk}/change/").content.decode()

    assert "Expires at" not in paid_page and "Released at" not in paid_page
    assert "Confirmed at" in paid_page
    assert "Expires at" in unpaid_page and "Confirmed at" not in unpaid_page


def test_a_ticket_received_by_transfer_is_not_listed_as_a_paid_order_of_nothing(shop):
    client, _, tier, _, _, _ = shop
    received = order_for(tier, "friend@example.test")
    Claim.objects.filter(pk=received.pk).update(source="transfer", amount=0)

    listed = client.get(ORDERS, {"source__exact": "transfer"})
    page = client.get(f"{ORDERS}{received.pk}/change/").content.decode()

    assert [o.pk for o in listed.context["cl"].result_list] == [received.pk]
    text = listed.content.decode()
    assert "received by transfer" in text and "nothing paid (sent by its holder)" in text
    assert "NGN 0.00" not in text and ">paid<" not in text
    assert "· friend@example.test · received by transfer" in page
    assert "What you can do now" not in page  # nothing paid: nothing to refund


def test_the_csv_times_are_dates_a_spreadsheet_reads(shop):
    client, event, _, paid, _, _ = shop
    Claim.objects.filter(pk=paid.pk).update(confirmed_at=paid.created_at)

    (first, _) = rows(client.get(f"/admin/events/event/{event.pk}/orders.csv"))

    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", first["created_at"])
    assert first["paid_at"] == first["created_at"]
    assert first["source"] == "sale"
