"""A ticket sent to someone: the email they get is HTML and text like the
others, with the tier, the seat and by when to accept it; once accepted,
My tickets says why it cannot be returned for a refund."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from events.models import Event
from tests.claims.resale_support import admitted, buy, my_tickets, resale_event
from tests.support.factories import CustomerFactory, bearer

pytestmark = pytest.mark.django_db


@pytest.fixture
def shop(api, client, sandbox, django_capture_on_commit_callbacks, eager_tasks):
    """A sale with returns and transfers open; ``shop()`` is a new buyer's
    paid ticket."""
    sandbox.config(send_webhooks=False)
    tier = resale_event(tickets=3, name="Detty December")
    Event.objects.filter(pk=tier.event_id).update(
        venue="Eko Hotel", starts_at=timezone.now() + timedelta(days=3)
    )

    def purchase():
        (who,) = admitted(tier.event, 1)
        return buy(api, client, sandbox, django_capture_on_commit_callbacks, tier, who)

    return purchase


@pytest.fixture
def seller(shop):
    return shop()


def test_the_transfer_email_is_html_with_the_tier_seat_and_when_to_accept(
    api, seller, mailoutbox, django_capture_on_commit_callbacks
):
    (ticket,) = seller.tickets()
    event = Event.objects.get(pk=ticket.event_id)
    mailoutbox.clear()

    with django_capture_on_commit_callbacks(execute=True):
        sent = api.post(
            f"/api/v1/tickets/{ticket.code}/transfer/",
            {"email": "friend@example.test"},
            format="json",
            **bearer(seller.customer),
        )

    assert sent.status_code == 201, sent.content
    (note,) = mailoutbox
    assert note.to == ["friend@example.test"]
    assert note.subject == "A ticket was sent to you for Detty December"
    ((html, kind),) = note.alternatives
    show = event.starts_at.strftime("%a %-d %b %Y, %H:%M")
    for body in (note.body, html):
        assert seller.customer.email in body
        assert ticket.tier.name in body
        assert f"Accept it before the show starts ({show} UTC)." in body
        assert "/tickets/" in body
    assert kind == "text/html"
    assert "Eko Hotel" in html and "Accept the ticket" in html


def test_a_ticket_received_by_transfer_says_why_it_cannot_be_returned(
    api, shop, seller, django_capture_on_commit_callbacks
):
    (ticket,) = seller.tickets()
    friend = CustomerFactory(email="friend@example.test")
    with django_capture_on_commit_callbacks(execute=True):
        sent = api.post(
            f"/api/v1/tickets/{ticket.code}/transfer/",
            {"email": friend.email},
            format="json",
            **bearer(seller.customer),
        )
        taken = api.post(
            f"/api/v1/transfers/{sent.json()['transfer_id']}/accept/", **bearer(friend)
        )
    assert taken.status_code == 200, taken.content

    (received,) = my_tickets(api, friend)["results"]
    (bought,) = my_tickets(api, shop().customer)["results"]

    assert (received["status"], received["can_return"]) == ("valid", False)
    assert received["return_refusal"] == (
        "You were sent this ticket, so it cannot be returned for a refund: you paid nothing "
        "for it. You can send it on to someone instead."
    )
    assert (bought["status"], bought["can_return"], bought["return_refusal"]) == (
        "valid", True, "",
    )  # fmt: skip
