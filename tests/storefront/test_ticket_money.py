"""A ticket's page shows its purchase's money in words, the same figures as
the claim's API answer: what was paid, refunded, on its way back and kept as
a fee (only what is not zero), and each refund with where it stands. A
ticket received by transfer shows none: nothing was paid for it.

Built through the real services, API and sandbox gateway (refunds settled
by hand): a buyer of two tickets returns one, someone else buys it (its
refund goes back to the buyer), and the buyer sends the other to a friend."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

import events.selectors
from claims.models import IssuedTicket, TicketReturn
from events.models import Event
from events.selectors import tier_snapshot_forget
from fairqueue.money import money_format
from payments.services import payment_refund
from tests.claims.resale_support import (
    FEE,
    PRICE,
    Buyer,
    admitted,
    buy,
    resale_event,
    return_ticket,
)
from tests.support.factories import CustomerFactory, bearer
from tests.support.payments import post_webhook

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_tier_cache(monkeypatch):
    """A return changes its tier between claims: read it at once."""
    monkeypatch.setattr(events.selectors, "TIER_CACHE_SECONDS", 0)
    tier_snapshot_forget()
    yield
    tier_snapshot_forget()


@pytest.fixture
def gateway(sandbox):
    sandbox.config(send_webhooks=False, refund_outcome="manual")
    return sandbox


def money_section(client, ticket: IssuedTicket) -> str:
    """The words of the page's money section ("" when it has none)."""
    page = client.get(f"/tickets/{ticket.code}/")
    assert page.status_code == 200
    html = page.content.decode()
    found = re.search(r'<section class="ticket-money.*?</section>', html, re.S)
    if not found:
        return ""
    inline = re.sub(r"</?(time|span)\b[^>]*>", "", found.group(0))
    return " ".join(re.sub(r"<[^>]+>", " ", inline).split())


def api_money(api, buyer: Buyer) -> list[str]:
    """The claim's API answer's figures as the page words them."""
    answer = api.get(f"/api/v1/claims/{buyer.claim.pk}/", **bearer(buyer.customer)).json()
    money = answer["money"]
    labels = {"paid": "Paid", "refunded": "Refunded", "refund_pending": "Refund on its way",
              "fee_kept": "Kept as a fee"}  # fmt: skip
    return [
        f"{label} {money_format(money[key], money['currency'])}"
        for key, label in labels.items()
        if money[key]
    ]


def test_the_ticket_page_shows_the_purchase_money_in_words(
    api, client, gateway, django_capture_on_commit_callbacks, eager_tasks
):
    on_commit = django_capture_on_commit_callbacks
    tier = resale_event(tickets=2)
    seller_in, second_in = admitted(tier.event, 2)
    seller = buy(api, client, gateway, on_commit, tier, seller_in, quantity=2)
    kept, returned = seller.tickets()
    assert money_section(client, kept) == (
        "Payment for this order For the whole order (2 tickets), not this ticket alone. "
        "Paid NGN 10,000.00"
    )

    assert return_ticket(api, seller, returned, on_commit).status_code == 202
    buy(api, client, gateway, on_commit, tier, second_in)  # the returned ticket, resold
    ret = TicketReturn.objects.get(ticket=returned)
    today = timezone.now().strftime("%-d %b %Y")

    waiting = money_section(client, kept)
    assert "Paid NGN 10,000.00 Refund on its way NGN 4,500.00 Kept as a fee NGN 500.00" in waiting
    assert "Refunded" not in waiting
    assert f"Refund of NGN 4,500.00: on its way (asked {today})" in waiting
    assert money_format(PRICE - FEE, "NGN") == "NGN 4,500.00"

    (sent,) = gateway.refunds_of(seller.payment.reference)
    gateway.settle_refund(sent["id"], "processed")
    with on_commit(execute=True):
        assert post_webhook(client, *gateway.refund_webhook(sent["id"])).status_code == 200

    paid_back = money_section(client, kept)
    assert "Paid NGN 10,000.00 Refunded NGN 4,500.00 Kept as a fee NGN 500.00" in paid_back
    assert "on its way" not in paid_back
    assert f"Refund of NGN 4,500.00: paid back (asked {today})" in paid_back
    assert str(ret.pk) not in paid_back  # the refund's own note is staff's, not the buyer's
    # The same figures as the API, on the resold ticket's (void) page too.
    figures = " ".join(api_money(api, seller))
    assert figures == "Paid NGN 10,000.00 Refunded NGN 4,500.00 Kept as a fee NGN 500.00"
    assert figures in paid_back and figures in money_section(client, returned)

    # The kept ticket sent on: the friend's ticket was not paid for by them.
    friend = CustomerFactory(email="friend@example.test")
    with on_commit(execute=True):
        offer = api.post(
            f"/api/v1/tickets/{kept.code}/transfer/",
            {"email": friend.email},
            format="json",
            **bearer(seller.customer),
        )
    assert offer.status_code == 201, offer.content
    with on_commit(execute=True):
        taken = api.post(
            f"/api/v1/transfers/{offer.json()['transfer_id']}/accept/", **bearer(friend)
        )
    assert taken.status_code == 200, taken.content
    theirs = IssuedTicket.objects.get(pk=taken.json()["ticket"]["ticket_id"])
    page = client.get(f"/tickets/{theirs.code}/").content.decode()
    assert "Valid" in page
    assert money_section(client, theirs) == ""
    assert "NGN" not in page and "Payment for this order" not in page
    # The sender's old (now void) page still shows what the purchase paid.
    assert figures in money_section(client, kept)


def test_a_refund_that_failed_says_so_and_the_page_escapes(
    api, client, gateway, django_capture_on_commit_callbacks, eager_tasks
):
    on_commit = django_capture_on_commit_callbacks
    tier = resale_event(tickets=1)
    Event.objects.filter(pk=tier.event_id).update(name="<b>Gig</b>")
    buyer = buy(api, client, gateway, on_commit, tier, admitted(tier.event, 1)[0])
    (ticket,) = buyer.tickets()
    with on_commit(execute=True):
        payment_refund(payment_id=buyer.payment.pk, actor="staff:test", reason="<i>sorry</i>")
    (sent,) = gateway.refunds_of(buyer.payment.reference)
    gateway.settle_refund(sent["id"], "failed")
    with on_commit(execute=True):
        assert post_webhook(client, *gateway.refund_webhook(sent["id"])).status_code == 200

    page = client.get(f"/tickets/{ticket.code}/").content.decode()

    assert "<b>Gig</b>" not in page and "&lt;b&gt;Gig&lt;/b&gt;" in page
    assert "sorry" not in page  # staff's reason is not the buyer's to read
    assert money_section(client, ticket) == (
        "Payment for this order Paid NGN 5,000.00 Refund of NGN 5,000.00: failed: our staff "
        f"are on it (asked {timezone.now().strftime('%-d %b %Y')})"
    )
