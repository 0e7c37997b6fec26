"""The door: POST events/{id}/tickets/check-in/ with an organizer member's
admin session and CSRF token."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from django.test import Client

from claims.domain import ReleaseReason, ticket_code_display
from claims.models import IssuedTicket
from claims.services import claim_confirm, claim_create, claim_release, issued_ticket_check_in
from events.management.commands.bootstrap_demo import ensure_organizer_group
from fairqueue.errors import Conflict
from tests.support.factories import OrganizerFactory, UserFactory
from tests.support.races import Race, wait_until_blocked
from tests.support.sales import (
    admit_directly,
    claim_seats,
    make_customers,
    on_sale,
    on_sale_reserved,
)

pytestmark = pytest.mark.django_db


def paid_ticket(tier) -> IssuedTicket:
    (buyer,) = admit_directly(tier.event, make_customers(1))
    claim = claim_create(
        event_id=tier.event_id,
        customer_id=buyer.customer.id,
        admission_token=buyer.token,
        tier_id=tier.id,
        quantity=1,
    )
    claim_confirm(claim_id=claim.pk)
    return IssuedTicket.objects.get(claim=claim)


def door(organizer, *, superuser: bool = False) -> tuple[Client, str]:
    """A browser signed in to the admin as a member of ``organizer``, with
    CSRF checks on (as in production), and its CSRF token."""
    user = UserFactory(password=None, is_superuser=superuser)
    user.groups.add(ensure_organizer_group())
    if organizer is not None:
        organizer.members.add(user)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.get("/")  # any page sets the csrftoken cookie
    client.get("/admin/")
    return client, client.cookies["csrftoken"].value


def scan(client: Client, csrf: str | None, event_id, code: str):
    headers = {"HTTP_X_CSRFTOKEN": csrf} if csrf else {}
    return client.post(
        f"/api/v1/events/{event_id}/tickets/check-in/",
        json.dumps({"code": code}),
        content_type="application/json",
        **headers,
    )


@pytest.fixture
def tier():
    return on_sale(tickets=5)


def test_the_first_scan_lets_the_holder_in(tier):
    ticket = paid_ticket(tier)
    client, csrf = door(tier.event.organizer)

    response = scan(client, csrf, tier.event_id, ticket_code_display(ticket.code))

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["result"] == "checked_in"
    assert body["code"] == ticket_code_display(ticket.code)
    assert (body["tier"], body["seat"], body["holder_email"]) == (
        tier.name,
        1,
        ticket.holder_email,
    )
    assert body["seat_label"] == ""  # general admission
    ticket.refresh_from_db()
    assert ticket.status == "USED"
    assert ticket.checked_in_by.startswith("staff:")


def test_a_reserved_ticket_tells_the_door_its_seat():
    tier = on_sale_reserved(rows=2, seats_per_row=5)
    (buyer,) = admit_directly(tier.event, make_customers(1))
    claim = claim_seats(tier, buyer, ["B-3"])
    claim_confirm(claim_id=claim.pk)
    ticket = IssuedTicket.objects.get(claim=claim)
    client, csrf = door(tier.event.organizer)

    response = scan(client, csrf, tier.event_id, ticket.code)

    assert response.status_code == 200, response.content
    assert response.json()["seat_label"] == "B-3"


def test_the_second_scan_answers_already_used_with_the_time(tier):
    ticket = paid_ticket(tier)
    client, csrf = door(tier.event.organizer)
    first = scan(client, csrf, tier.event_id, ticket.code.lower())  # typed, any case

    second = scan(client, csrf, tier.event_id, ticket_code_display(ticket.code))

    assert first.status_code == 200
    assert second.status_code == 409
    error = second.json()["error"]
    assert error["code"] == "ticket_already_used"
    assert datetime.fromisoformat(error["details"]["checked_in_at"]) == datetime.fromisoformat(
        first.json()["checked_in_at"].replace("Z", "+00:00")
    )
    assert IssuedTicket.objects.get(pk=ticket.pk).status == "USED"


def test_a_refunded_ticket_answers_void(tier, django_capture_on_commit_callbacks):
    ticket = paid_ticket(tier)
    with django_capture_on_commit_callbacks(execute=True):
        claim_release(claim_id=ticket.claim_id, reason=ReleaseReason.REFUNDED)
    client, csrf = door(tier.event.organizer)

    response = scan(client, csrf, tier.event_id, ticket.code)

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "ticket_void"
    assert response.json()["error"]["details"]["voided_at"]
    assert IssuedTicket.objects.get(pk=ticket.pk).checked_in_at is None


def test_a_ticket_whose_claim_left_confirmed_is_void_even_if_not_marked(tier):
    """Belt and braces: a path that released a paid claim without voiding
    (none exists) still cannot let the ticket in."""
    ticket = paid_ticket(tier)
    type(ticket.claim).objects.filter(pk=ticket.claim_id).update(status="RELEASED")

    with pytest.raises(Conflict) as refused:
        issued_ticket_check_in(event_id=tier.event_id, code=ticket.code, actor="staff:x")

    assert refused.value.code == "ticket_void"
    assert IssuedTicket.objects.get(pk=ticket.pk).status == "VALID"  # untouched


def test_an_unknown_code_and_another_events_ticket(tier):
    ticket = paid_ticket(tier)
    other_tier = on_sale(tickets=2, name="Other Gig", organizer=tier.event.organizer)
    client, csrf = door(tier.event.organizer)

    unknown = scan(client, csrf, tier.event_id, "ZZZZ-ZZZZ-ZZZZ-ZZZZ")
    garbage = scan(client, csrf, tier.event_id, "not a code")
    elsewhere = scan(client, csrf, other_tier.event_id, ticket.code)

    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "ticket_not_found")
    assert (garbage.status_code, garbage.json()["error"]["code"]) == (404, "ticket_not_found")
    assert elsewhere.status_code == 409
    assert elsewhere.json()["error"]["code"] == "ticket_other_event"
    assert IssuedTicket.objects.get(pk=ticket.pk).status == "VALID"


def test_another_organizers_ticket_is_refused_without_naming_its_event(tier):
    """The door of one organizer learns nothing of another's sale from a
    code: neither the event's name nor its id."""
    ticket = paid_ticket(tier)
    rival = on_sale(tickets=2, name="Rival Gig", organizer=OrganizerFactory())
    client, csrf = door(rival.event.organizer)

    answer = scan(client, csrf, rival.event_id, ticket.code)

    assert answer.status_code == 409
    error = answer.json()["error"]
    assert error["code"] == "ticket_other_event"
    assert error["details"] == {}
    body = answer.content.decode()
    assert tier.event.name not in body
    assert str(tier.event_id) not in body
    assert str(tier.event_id).replace("-", "") not in body
    assert IssuedTicket.objects.get(pk=ticket.pk).status == "VALID"


def test_without_a_session_it_is_401_and_nothing_changes(tier):
    ticket = paid_ticket(tier)

    response = scan(Client(), None, tier.event_id, ticket.code)

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
    assert IssuedTicket.objects.get(pk=ticket.pk).status == "VALID"


def test_a_customer_token_is_not_an_organizer(tier):
    from tests.support.factories import bearer

    ticket = paid_ticket(tier)
    response = Client().post(
        f"/api/v1/events/{tier.event_id}/tickets/check-in/",
        json.dumps({"code": ticket.code}),
        content_type="application/json",
        **bearer(ticket.claim.customer),
    )
    assert response.status_code == 401
    assert IssuedTicket.objects.get(pk=ticket.pk).status == "VALID"


def test_a_member_of_another_organizer_is_403_and_nothing_changes(tier):
    ticket = paid_ticket(tier)
    client, csrf = door(OrganizerFactory())

    response = scan(client, csrf, tier.event_id, ticket.code)

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"
    assert IssuedTicket.objects.get(pk=ticket.pk).status == "VALID"


def test_a_superuser_may_check_in_any_event(tier):
    ticket = paid_ticket(tier)
    client, csrf = door(None, superuser=True)
    assert scan(client, csrf, tier.event_id, ticket.code).status_code == 200


def test_without_the_csrf_token_it_is_403_and_nothing_changes(tier):
    ticket = paid_ticket(tier)
    client, _ = door(tier.event.organizer)

    response = scan(client, None, tier.event_id, ticket.code)

    assert response.status_code == 403
    assert "CSRF" in response.json()["error"]["message"]
    assert IssuedTicket.objects.get(pk=ticket.pk).status == "VALID"


def test_the_door_page_is_for_organizer_members(tier, client):
    outsider, _ = door(OrganizerFactory())
    member, _ = door(tier.event.organizer)

    assert client.get(f"/events/{tier.event_id}/check-in/").status_code == 302  # to the login
    assert outsider.get(f"/events/{tier.event_id}/check-in/").status_code == 404
    page = member.get(f"/events/{tier.event_id}/check-in/")
    assert page.status_code == 200
    assert b'id="checkin-form"' in page.content


# --- two doors scanning one code at the same moment ------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("guard", "admitted"), [(False, 4), (True, 1)])
def test_two_doors_scanning_one_code_at_once_admit_it_once(guard, admitted):
    """With the guard off (read, then write) every door says "welcome in";
    with the conditional UPDATE exactly one does and the others "already used".
    The test holds the ticket's row lock until all four are waiting on it."""
    from django.db import transaction

    tier = on_sale(tickets=5)
    ticket = paid_ticket(tier)

    def check_in(door_no: int):
        return issued_ticket_check_in(
            event_id=tier.event_id, code=ticket.code, actor=f"staff:door{door_no}", guard=guard
        )

    with transaction.atomic():
        IssuedTicket.objects.select_for_update().get(pk=ticket.pk)
        race = Race(check_in, [1, 2, 3, 4])
        wait_until_blocked(4)
    results = race.results()

    welcomed = [r for r in results if isinstance(r, IssuedTicket)]
    refused = [r for r in results if isinstance(r, Conflict)]
    assert len(welcomed) == admitted
    assert len(refused) == 4 - admitted
    assert {r.code for r in refused} <= {"ticket_already_used"}
