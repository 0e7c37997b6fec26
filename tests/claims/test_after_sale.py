"""The waiting list after the sale: while returns are open, customers join
the list of an event whose sale ended, returned tickets (and only those) are
offered to it, and an offer's admission claims and pays; the line's
admissions cannot claim any more. When returns close, the list closes."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from claims.models import Claim, IssuedTicket, TicketReturn
from events.models import Event
from events.services import events_end_due
from fairqueue.redis import make_client
from inventory.models import Ticket
from queueing import store
from queueing.domain import QueueStatus
from queueing.models import AdmissionState, QueueEntry, WaitlistState
from queueing.services import admission_tick_event, queue_reconcile_all
from queueing.services.waitlist_offers import waitlist_tick_event
from queueing.store import QueueStore
from tests.claims.resale_support import admitted, pay_for, resale_event, return_ticket
from tests.support.factories import CustomerFactory, bearer
from tests.support.payments import reload

pytestmark = pytest.mark.django_db


def waitlist(event_id) -> str:
    return f"/api/v1/events/{event_id}/waitlist/"


def sale_ends(event: Event, on_commit) -> None:
    """The sale window closes and the beat's sweep ends the event."""
    Event.objects.filter(pk=event.pk).update(sale_end=timezone.now() - timedelta(seconds=1))
    with on_commit(execute=True):
        assert events_end_due() == [str(event.pk)]


def list_open_since_a_while(event_id) -> None:
    """The first minute's draw is behind: joiners keep their order."""
    opened = timezone.now() - timedelta(minutes=2)
    WaitlistState.objects.update_or_create(
        event_id=event_id, defaults={"opened_at": opened, "drawn_at": opened}
    )


def join_list(api, event_id, n: int) -> list:
    """``n`` customers join the waiting list, in this order."""
    customers = [CustomerFactory() for _ in range(n)]
    for customer in customers:
        joined = api.post(waitlist(event_id), {}, format="json", **bearer(customer))
        assert joined.status_code == 201, joined.content
    return customers


def claim_with(api, tier, customer, token: str, quantity: int = 1):
    return api.post(
        f"/api/v1/events/{tier.event_id}/claims/",
        {"tier_id": str(tier.id), "quantity": quantity, "admission_token": token},
        format="json",
        **bearer(customer),
    )


def test_after_the_sale_a_return_is_offered_to_the_list_and_claimed_with_the_offer(
    api, client, gateway, shop, django_capture_on_commit_callbacks, mailoutbox
):
    on_commit = django_capture_on_commit_callbacks
    tier = resale_event(tickets=3)  # two of them never sold
    first, late = admitted(tier.event, 2)
    seller = shop(tier, first)
    (returned,) = seller.tickets()
    sale_ends(tier.event, on_commit)

    # The line's admission ended with the sale and cannot claim.
    refused = claim_with(api, tier, late.customer, late.token)
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "event_not_on_sale"

    list_open_since_a_while(tier.event_id)
    waiting = CustomerFactory()
    joined = api.post(waitlist(tier.event_id), {}, format="json", **bearer(waiting))
    assert joined.status_code == 201, joined.content
    assert joined.json()["position"] == 1
    # Tickets never sold stay unsold after the sale: nothing is offered.
    assert waitlist_tick_event(event_id=tier.event_id).offered == []

    answer = return_ticket(api, seller, returned, on_commit)
    assert answer.status_code == 202, answer.content
    offer = api.get(waitlist(tier.event_id), **bearer(waiting)).json()
    assert offer["status"] == "offered", offer
    assert [m.to for m in mailoutbox][-1] == [waiting.email]
    position = api.get(f"/api/v1/events/{tier.event_id}/queue/position/", **bearer(waiting))
    assert position.json()["status"] == "ADMITTED"

    claimed = claim_with(api, tier, waiting, offer["admission_token"])
    assert claimed.status_code == 201, claimed.content
    claim = Claim.objects.get(pk=claimed.json()["claim_id"])
    row = Ticket.objects.get(claim=claim)
    assert row.resale_from_id == seller.claim.id  # the returned ticket, not an unsold one
    pay_for(api, client, gateway, on_commit, claim)

    assert reload(claim).status == "CONFIRMED"
    ret = TicketReturn.objects.get(ticket=returned)
    assert ret.status == "RESOLD" and ret.resale_claim_id == claim.id
    assert reload(returned).status == "VOID"
    assert IssuedTicket.objects.get(claim=claim, status="VALID").replaces_id == returned.id
    assert Ticket.objects.filter(tier=tier, claim__isnull=True).count() == 2


def test_an_offer_made_before_the_end_outlives_it_while_returns_are_open(
    api, client, gateway, shop, django_capture_on_commit_callbacks
):
    on_commit = django_capture_on_commit_callbacks
    tier = resale_event(tickets=1)
    (first,) = admitted(tier.event, 1)
    seller = shop(tier, first)
    Event.objects.filter(pk=tier.event_id).update(status="SOLD_OUT")
    list_open_since_a_while(tier.event_id)
    waiting = CustomerFactory()
    assert (
        api.post(waitlist(tier.event_id), {}, format="json", **bearer(waiting)).status_code == 201
    )
    return_ticket(api, seller, seller.tickets()[0], on_commit)
    token = api.get(waitlist(tier.event_id), **bearer(waiting)).json()["admission_token"]
    assert token

    sale_ends(tier.event, on_commit)
    queue_reconcile_all()
    waitlist_tick_event(event_id=tier.event_id)

    offer = QueueEntry.objects.get(customer=waiting)
    assert offer.status == QueueStatus.ADMITTED
    assert api.get(waitlist(tier.event_id), **bearer(waiting)).json()["status"] == "offered"
    claimed = claim_with(api, tier, waiting, token)
    assert claimed.status_code == 201, claimed.content


def test_when_returns_close_the_list_closes_and_its_offers_end(
    api, shop, django_capture_on_commit_callbacks
):
    on_commit = django_capture_on_commit_callbacks
    tier = resale_event(tickets=1)
    (first,) = admitted(tier.event, 1)
    seller = shop(tier, first)
    sale_ends(tier.event, on_commit)
    list_open_since_a_while(tier.event_id)
    offered, waiting = join_list(api, tier.event_id, 2)
    return_ticket(api, seller, seller.tickets()[0], on_commit)
    token = api.get(waitlist(tier.event_id), **bearer(offered)).json()["admission_token"]

    Event.objects.filter(pk=tier.event_id).update(
        returns_until=timezone.now() - timedelta(seconds=1)
    )
    report = waitlist_tick_event(event_id=tier.event_id)

    assert report.closed == 1
    assert api.get(waitlist(tier.event_id), **bearer(waiting)).json()["status"] == "closed"
    assert api.get(waitlist(tier.event_id), **bearer(offered)).json()["status"] == "lapsed"
    refused = claim_with(api, tier, offered, token)
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "event_not_on_sale"
    late = api.post(waitlist(tier.event_id), {}, format="json", **bearer(CustomerFactory()))
    assert late.json()["error"]["code"] == "waitlist_closed"


def test_an_offer_made_after_the_end_lapses_though_the_line_stopped_its_clock(
    api, shop, django_capture_on_commit_callbacks, monkeypatch
):
    """The line's last tick found Redis unreachable and stopped the event's
    admission clock; the sale ended before any tick could start it again.
    The waiting list keeps the clock after the end: an offer whose window
    ran out lapses, and the ticket goes to the next on the list."""
    on_commit = django_capture_on_commit_callbacks
    tier = resale_event(tickets=1)
    (first,) = admitted(tier.event, 1)
    seller = shop(tier, first)
    with monkeypatch.context() as down:
        down.setattr(store, "_store", QueueStore(client=make_client("redis://127.0.0.1:1/0")))
        admission_tick_event(event_id=tier.event_id, use_lock=False)
    assert AdmissionState.objects.get(event_id=tier.event_id).stopped_since is not None
    sale_ends(tier.event, on_commit)
    Event.objects.filter(pk=tier.event_id).update(admission_window_seconds=1)
    list_open_since_a_while(tier.event_id)
    left, next_one = join_list(api, tier.event_id, 2)
    return_ticket(api, seller, seller.tickets()[0], on_commit)
    assert api.get(waitlist(tier.event_id), **bearer(left)).json()["status"] == "offered"

    time.sleep(1.1)  # the offer's window runs out: its customer never came back
    with on_commit(execute=True):
        report = waitlist_tick_event(event_id=tier.event_id)

    assert QueueEntry.objects.get(customer=left).status == QueueStatus.EXPIRED
    assert api.get(waitlist(tier.event_id), **bearer(left)).json()["status"] == "lapsed"
    assert report.offered == [str(next_one.id)]
    offer = api.get(waitlist(tier.event_id), **bearer(next_one)).json()
    assert offer["status"] == "offered" and offer["admission_token"]


def test_after_the_end_an_offer_gets_back_the_time_no_round_ran(
    api, shop, django_capture_on_commit_callbacks, settings
):
    """The beat stood still after the sale (no round of the list for more
    than three intervals): the offer open meanwhile is given that time back
    instead of lapsing, as the line's admissions are."""
    settings.ADMISSION_INTERVAL_SECONDS = 0.2
    on_commit = django_capture_on_commit_callbacks
    tier = resale_event(tickets=1)
    (first,) = admitted(tier.event, 1)
    seller = shop(tier, first)
    sale_ends(tier.event, on_commit)
    # An offer's window ends on a whole second, so it may be a second short:
    # two seconds still end after the stall begins (an interval after the
    # offer's round).
    Event.objects.filter(pk=tier.event_id).update(admission_window_seconds=2)
    list_open_since_a_while(tier.event_id)
    (offered,) = join_list(api, tier.event_id, 1)
    return_ticket(api, seller, seller.tickets()[0], on_commit)
    window = QueueEntry.objects.get(customer=offered).admission_expires_at

    time.sleep(2.5)  # no round runs: the window would have lapsed
    waitlist_tick_event(event_id=tier.event_id)

    offer = QueueEntry.objects.get(customer=offered)
    assert offer.status == QueueStatus.ADMITTED
    assert offer.admission_expires_at > window
    assert api.get(waitlist(tier.event_id), **bearer(offered)).json()["status"] == "offered"
