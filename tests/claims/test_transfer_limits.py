"""A transfer offer emails a stranger from FairQueue's address, so it is
limited like a sign-in code: transfers per ticket and per sender, offers
mailed per recipient mailbox (429 + Retry-After past a limit, nothing
written, nothing sent), and a ticket sent again to a mailbox already emailed
about it sends no second email within TRANSFER_EMAIL_REPEAT_SECONDS."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from claims.models import TicketEvent, TicketTransfer
from storefront.tasks import emails_sweep
from tests.claims.resale_support import admitted, resale_event
from tests.support.factories import CustomerFactory, bearer

pytestmark = pytest.mark.django_db

LATER = timedelta(minutes=5)


@pytest.fixture
def send(api, django_capture_on_commit_callbacks, eager_tasks):
    """``send(holder, ticket, email)``: the API's answer; its email, if any,
    is sent before it returns."""

    def post(holder, ticket, email):
        with django_capture_on_commit_callbacks(execute=True):
            return api.post(
                f"/api/v1/tickets/{ticket.code}/transfer/",
                {"email": email},
                format="json",
                **bearer(holder),
            )

    return post


@pytest.fixture
def cancel(api):
    def delete(holder, response):
        answer = api.delete(
            f"/api/v1/transfers/{response.json()['transfer_id']}/", **bearer(holder)
        )
        assert answer.status_code == 204, answer.content

    return delete


def offers(mailoutbox, to=None):
    """The transfer offers sent (to ``to`` only, when given)."""
    return [
        m for m in mailoutbox if "was sent to you" in m.subject and (to is None or m.to == [to])
    ]


def assert_limited(response, *, within: int) -> None:
    assert response.status_code == 429, response.content
    error = response.json()["error"]
    retry_after = int(response["Retry-After"])
    assert error["code"] == "rate_limited"
    assert 0 < retry_after <= within
    assert error["details"] == {"retry_after": retry_after}


def test_a_cancelled_and_remade_transfer_to_one_mailbox_is_mailed_once(
    api, shop, send, cancel, mailoutbox, settings
):
    # The mailbox limit counts offers mailed: the repeats do not spend it.
    settings.TRANSFER_MAILBOX_LIMITS = "1/hour"
    tier = resale_event(tickets=1)
    (seller_in,) = admitted(tier.event, 1)
    seller = shop(tier, seller_in)
    (ticket,) = seller.tickets()
    victim = "victim@example.test"

    for spelling in (victim, "Victim+again@example.test", victim):
        sent = send(seller.customer, ticket, spelling)
        assert sent.status_code == 201, sent.content
        cancel(seller.customer, sent)
    again = send(seller.customer, ticket, victim)
    assert again.status_code == 201, again.content

    assert len(offers(mailoutbox)) == 1
    assert offers(mailoutbox)[0].to == [victim]
    assert TicketTransfer.objects.filter(ticket=ticket).count() == 4
    # Not mailed later either: the sweep finds nothing unsent.
    TicketTransfer.objects.update(created_at=timezone.now() - LATER)
    assert emails_sweep() == 0
    assert len(offers(mailoutbox)) == 1
    # The transfer made again is a transfer like any other.
    recipient = CustomerFactory(email=victim)
    taken = api.post(
        f"/api/v1/transfers/{again.json()['transfer_id']}/accept/", **bearer(recipient)
    )
    assert taken.status_code == 200, taken.content
    assert taken.json()["ticket"]["status"] == "valid"


def test_the_offer_is_mailed_again_once_the_repeat_window_has_passed(
    shop, send, cancel, mailoutbox, settings
):
    tier = resale_event(tickets=1)
    (seller_in,) = admitted(tier.event, 1)
    seller = shop(tier, seller_in)
    (ticket,) = seller.tickets()
    first = send(seller.customer, ticket, "friend@example.test")
    cancel(seller.customer, first)
    other = send(seller.customer, ticket, "other@example.test")  # another mailbox: mailed
    cancel(seller.customer, other)
    assert [m.to for m in offers(mailoutbox)] == [["friend@example.test"], ["other@example.test"]]

    window = timedelta(seconds=settings.TRANSFER_EMAIL_REPEAT_SECONDS)
    TicketTransfer.objects.update(emailed_at=timezone.now() - window - timedelta(seconds=1))
    assert send(seller.customer, ticket, "friend@example.test").status_code == 201
    assert len(offers(mailoutbox, "friend@example.test")) == 2


def test_transfers_per_ticket_are_limited(shop, send, cancel, mailoutbox, settings):
    settings.TRANSFER_TICKET_LIMITS = "3/hour"
    tier = resale_event(tickets=2)
    (seller_in,) = admitted(tier.event, 1)
    seller = shop(tier, seller_in, quantity=2)
    ticket, spare = seller.tickets()
    for n in range(3):
        sent = send(seller.customer, ticket, f"friend{n}@example.test")
        assert sent.status_code == 201, sent.content
        cancel(seller.customer, sent)

    refused = send(seller.customer, ticket, "friend3@example.test")

    assert_limited(refused, within=3600)
    assert TicketTransfer.objects.filter(ticket=ticket).count() == 3
    assert TicketEvent.objects.filter(ticket=ticket, kind="transfer_offered").count() == 3
    assert offers(mailoutbox, "friend3@example.test") == []
    assert len(offers(mailoutbox)) == 3
    # The limit is the ticket's: the sender's other ticket goes.
    assert send(seller.customer, spare, "friend3@example.test").status_code == 201


def test_transfers_per_sender_are_limited(shop, send, cancel, mailoutbox, settings):
    settings.TRANSFER_SENDER_LIMITS = "2/hour,3/day"
    tier = resale_event(tickets=3)
    seller_in, other_in = admitted(tier.event, 2)
    seller = shop(tier, seller_in, quantity=2)
    other = shop(tier, other_in)
    first, second = seller.tickets()
    for ticket, to in ((first, "a@example.test"), (second, "b@example.test")):
        sent = send(seller.customer, ticket, to)
        assert sent.status_code == 201, sent.content
        cancel(seller.customer, sent)

    refused = send(seller.customer, first, "c@example.test")

    assert_limited(refused, within=3600)
    assert TicketTransfer.objects.count() == 2
    assert offers(mailoutbox, "c@example.test") == []
    # Another sender has limits of their own.
    (theirs,) = other.tickets()
    assert send(other.customer, theirs, "c@example.test").status_code == 201
    assert len(offers(mailoutbox, "c@example.test")) == 1


def test_offers_mailed_to_one_mailbox_are_limited_across_senders_and_spellings(
    shop, send, mailoutbox, settings
):
    settings.TRANSFER_MAILBOX_LIMITS = "2/hour,5/day"
    tier = resale_event(tickets=3)
    sellers = [shop(tier, who) for who in admitted(tier.event, 3)]
    spellings = ["victim@example.test", "Victim+x@example.test", "VICTIM@example.test"]
    answers = [
        send(seller.customer, seller.tickets()[0], to)
        for seller, to in zip(sellers, spellings, strict=True)
    ]

    assert [a.status_code for a in answers[:2]] == [201, 201]
    assert_limited(answers[2], within=3600)
    assert [m.to for m in offers(mailoutbox)] == [
        ["victim@example.test"],
        ["victim+x@example.test"],
    ]
    assert not TicketTransfer.objects.filter(sender=sellers[2].customer).exists()
    assert not TicketEvent.objects.filter(
        ticket__customer=sellers[2].customer, kind="transfer_offered"
    ).exists()
    # Another mailbox is not limited by this one.
    assert (
        send(sellers[2].customer, sellers[2].tickets()[0], "friend@example.test").status_code == 201
    )
