"""The door's page (console/door.py): the event's organizer checks tickets
in there, by camera or typed code, with a running count; nobody else finds it."""

from __future__ import annotations

import pytest

from claims.services import issued_ticket_check_in, issued_tickets_issue
from tests.support.admin import event_of
from tests.support.sales import hold_tickets

pytestmark = pytest.mark.django_db


def door_url(event) -> str:
    return f"/events/{event.pk}/check-in/"


@pytest.fixture
def door(org_a):
    client, _, organizer = org_a
    event = event_of(organizer, inventory=5)
    claim = hold_tickets(event.tiers.get(), 3, status="CONFIRMED")
    tickets = issued_tickets_issue(claim_id=claim.pk)
    return client, event, tickets


def test_the_organizer_sees_who_is_in_and_no_buyers_sign_in(door):
    client, event, tickets = door
    issued_ticket_check_in(event_id=event.pk, code=tickets[0].code, actor="staff:alice")

    response = client.get(door_url(event))

    page = response.content.decode()
    assert '<span id="door-in">1</span> of <span id="door-of">3</span> in' in page
    # The buyers' account box (where their "Sign in" link goes) is not on the organizer's page.
    assert 'id="fq-account"' not in page
    assert "alice" in page and f"/admin/events/event/{event.pk}/dashboard/" in page
    assert "console/door.js" in page
    policy = response["Content-Security-Policy"]
    assert "script-src 'self';" in policy + ";" and "worker-src 'self' blob:" in policy

    issued_ticket_check_in(event_id=event.pk, code=tickets[1].code, actor="staff:bob")
    assert client.get(door_url(event) + "count").json() == {"in": 2, "of": 3}


def test_the_event_and_its_dashboard_link_to_the_door(door, superuser_client):
    client, event, _ = door
    change = client.get(f"/admin/events/event/{event.pk}/change/").content.decode()
    dashboard = client.get(f"/admin/events/event/{event.pk}/dashboard/").content.decode()
    assert door_url(event) in change and door_url(event) in dashboard


def test_nobody_else_finds_the_door(door, org_b, client):
    _, event, _ = door
    for url in (door_url(event), door_url(event) + "count"):
        assert org_b[0].get(url).status_code == 404
    response = client.get(door_url(event))
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert client.get(door_url(event) + "count").status_code == 404
