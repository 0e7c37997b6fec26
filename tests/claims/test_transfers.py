"""Transfers without resale: a holder sends a ticket by email, the recipient
accepts signed in with that address; the old code voids, a new one (same
seat) is theirs. The organizer turns them off or caps them per ticket, and
one purchase per customer per event holds for transfers too."""

from __future__ import annotations

import pytest
from django.core import mail

from claims.models import IssuedTicket, TicketEvent, TicketTransfer
from claims.services import issued_ticket_check_in
from fairqueue.errors import Conflict
from tests.claims.resale_support import admitted, buy, my_tickets, resale_event
from tests.support.factories import CustomerFactory, bearer
from tests.support.invariants import failing
from tests.support.payments import reload

pytestmark = pytest.mark.django_db


@pytest.fixture
def shop(api, client, sandbox, django_capture_on_commit_callbacks, eager_tasks):
    sandbox.config(send_webhooks=False)

    def purchase(tier, who):
        return buy(api, client, sandbox, django_capture_on_commit_callbacks, tier, who)

    return purchase


def send(api, holder, ticket, email):
    return api.post(
        f"/api/v1/tickets/{ticket.code}/transfer/",
        {"email": email},
        format="json",
        **bearer(holder),
    )


def accept(api, customer, transfer_id):
    return api.post(f"/api/v1/transfers/{transfer_id}/accept/", **bearer(customer))


def test_transfer_sent_accepted_and_capped(api, shop, django_capture_on_commit_callbacks):
    tier = resale_event(tickets=3, transfer_limit=1)
    (first,) = admitted(tier.event, 1)
    seller = shop(tier, first)
    (old,) = seller.tickets()
    friend = CustomerFactory(email="Friend.Name+tickets@example.test")
    stranger = CustomerFactory()

    with django_capture_on_commit_callbacks(execute=True):
        sent = send(api, seller.customer, old, "friend.name@example.test")
    assert sent.status_code == 201, sent.content
    (note,) = [m for m in mail.outbox if "was sent to you" in m.subject]
    assert note.to == ["friend.name@example.test"] and seller.customer.email in note.body
    transfer_id = sent.json()["transfer_id"]
    again = send(api, seller.customer, old, "someone@example.test")
    assert again.status_code == 409 and again.json()["error"]["code"] == "transfer_pending"
    assert my_tickets(api, friend)["incoming_transfers"][0]["transfer_id"] == transfer_id
    assert accept(api, stranger, transfer_id).status_code == 404  # not sent to them

    taken = accept(api, friend, transfer_id)  # any spelling of the mailbox
    assert taken.status_code == 200, taken.content
    new = IssuedTicket.objects.get(pk=taken.json()["ticket"]["ticket_id"])
    assert taken.json()["ticket"]["status"] == "valid"
    assert (new.customer_id, new.replaces_id, new.transfers) == (friend.pk, old.pk, 1)
    assert new.seat_label == old.seat_label and new.code != old.code
    assert reload(old).status == "VOID" and old.void_reason == "transferred"
    with pytest.raises(Conflict) as void:
        issued_ticket_check_in(event_id=tier.event_id, code=old.code, actor="staff:door")
    assert void.value.code == "ticket_void"
    assert accept(api, friend, transfer_id).json()["error"]["code"] == "transfer_not_pending"
    statuses = [t["status"] for t in my_tickets(api, seller.customer)["results"]]
    assert statuses == ["transferred"]
    # At most one transfer per ticket here: the recipient cannot send it on.
    capped = send(api, friend, new, "third@example.test")
    assert capped.status_code == 409 and capped.json()["error"]["code"] == "transfers_not_allowed"
    # A ticket you were sent is not yours to return for a refund.
    kept = api.post(f"/api/v1/tickets/{new.code}/return/", **bearer(friend))
    assert kept.json()["error"]["code"] == "ticket_not_returnable"
    kinds = list(TicketEvent.objects.filter(ticket=old).values_list("kind", flat=True))
    assert kinds == ["transfer_offered", "transferred"]
    assert failing(tier.event) == {}


def test_transfer_limits_and_cancel(api, shop):
    tier = resale_event(tickets=3, transfers_allowed=False)
    first, second = admitted(tier.event, 2)
    seller, other = shop(tier, first), shop(tier, second)
    (ticket,) = seller.tickets()
    off = send(api, seller.customer, ticket, "friend@example.test")
    assert off.status_code == 409 and off.json()["error"]["code"] == "transfers_not_allowed"
    type(tier.event).objects.filter(pk=tier.event_id).update(transfers_allowed=True)
    own = send(api, seller.customer, ticket, seller.customer.email.upper())
    assert own.status_code == 422
    bad = send(api, seller.customer, ticket, "not an email")
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "validation_error"

    # One purchase per customer: someone holding tickets for the event cannot accept.
    to_other = send(api, seller.customer, ticket, other.customer.email)
    refused = accept(api, other.customer, to_other.json()["transfer_id"])
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "already_claimed"
    assert reload(ticket).status == "VALID"
    cancel = api.delete(
        f"/api/v1/transfers/{to_other.json()['transfer_id']}/", **bearer(seller.customer)
    )
    assert cancel.status_code == 204
    assert TicketTransfer.objects.get().status == "CANCELLED"
    late = accept(api, other.customer, to_other.json()["transfer_id"])
    assert late.json()["error"]["code"] == "transfer_not_pending"
    assert failing(tier.event) == {}
