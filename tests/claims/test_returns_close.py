"""The close of returns: a return still on resale when ``returns_until``
passes goes back to its holder, once: the ticket valid and theirs, its row
out of the resale inventory, the step in the ticket log, an email. A buyer's
claim holding the ticket at that moment completes the resale or frees the
ticket for the next run, never both (the race on real Postgres, threads)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from claims.domain import ReleaseReason
from claims.models import Claim, TicketEvent, TicketReturn
from claims.services import claim_release, returns_close_due, ticket_return
from claims.services import returns_close as returns_close_module
from claims.tasks import returns_close
from config.celery import _beat_schedule
from events.models import Event
from fairqueue.errors import AppError
from inventory.models import Ticket
from tests.claims.resale_support import admitted, pay_for, resale_event
from tests.support.invariants import failing
from tests.support.payments import reload
from tests.support.races import Between, race_calls
from tests.support.sales import claim_one


def returns_closed(event_id) -> None:
    Event.objects.filter(pk=event_id).update(returns_until=timezone.now() - timedelta(seconds=1))


def on_resale(shop, on_commit, *, buyers: int = 0):
    """A sold-out event (one ticket) whose ticket is on resale, and admitted
    buyers for it."""
    tier = resale_event(tickets=1)
    seller_in, *others = admitted(tier.event, 1 + buyers)
    seller = shop(tier, seller_in)
    (ticket,) = seller.tickets()
    with on_commit(execute=True):
        ticket_return(code=ticket.code, customer_id=seller.customer.pk)
    return tier, seller, ticket, others


@pytest.mark.django_db
def test_an_untaken_return_goes_back_to_its_holder_once(
    shop, django_capture_on_commit_callbacks, mailoutbox
):
    on_commit = django_capture_on_commit_callbacks
    tier, seller, ticket, _ = on_resale(shop, on_commit)
    assert returns_close_due().closed == []  # returns still open: nothing happens
    returns_closed(tier.event_id)
    mailoutbox.clear()

    with on_commit(execute=True):
        report = returns_close_due()

    ret = TicketReturn.objects.get(ticket=ticket)
    assert report.closed == [str(ret.pk)]
    assert (ret.status, ret.end_reason) == ("WITHDRAWN", "returns_closed")
    assert reload(ticket).status == "VALID" and ticket.customer_id == seller.customer.pk
    row = Ticket.objects.get(tier=tier)
    assert (row.claim_id, row.resale_from_id) == (seller.claim.pk, None)
    steps = TicketEvent.objects.filter(ticket=ticket, kind="return_closed")
    assert list(steps.values_list("actor", flat=True)) == ["system"]
    (email,) = mailoutbox
    assert email.to == [seller.customer.email] and "yours again" in email.subject
    assert reload(ret).emailed_at is not None

    with on_commit(execute=True):
        again = returns_close_due()
    assert (again.closed, again.held) == ([], [])
    assert steps.count() == 1 and len(mailoutbox) == 1
    assert failing(tier.event) == {}


@pytest.mark.django_db
def test_a_buyer_holding_it_at_the_close_resells_it_or_frees_it_for_the_next_run(
    api, client, gateway, shop, django_capture_on_commit_callbacks
):
    on_commit = django_capture_on_commit_callbacks
    tier, _, ticket, (payer, _) = on_resale(shop, on_commit, buyers=2)
    bought = claim_one(tier, payer)
    returns_closed(tier.event_id)
    ret = TicketReturn.objects.get(ticket=ticket)
    assert returns_close_due().held == [str(ret.pk)]  # the buyer's claim holds it
    pay_for(api, client, gateway, on_commit, bought)
    assert reload(ret).status == "RESOLD"
    assert returns_close_due().held == []

    # The second round: the buyer's claim runs out unpaid instead.
    tier, _seller, ticket, (payer, dropper) = on_resale(shop, on_commit, buyers=2)
    held = claim_one(tier, dropper)
    returns_closed(tier.event_id)
    assert len(returns_close_due().held) == 1
    with on_commit(execute=True):
        claim_release(claim_id=held.pk, reason=ReleaseReason.EXPIRED)
    assert len(returns_close_due().closed) == 1
    assert reload(ticket).status == "VALID"
    assert failing(tier.event) == {}


def test_returns_close_is_on_the_beat():
    schedule = _beat_schedule()
    assert schedule["returns-close"]["task"] == returns_close.name


@pytest.mark.django_db(transaction=True)
def test_a_claim_that_picks_the_ticket_first_resells_it(
    monkeypatch, api, client, gateway, shop, django_capture_on_commit_callbacks
):
    """The close holds the purchase's row lock and has read the return; the
    buyer's claim takes the ticket's row just then: the close leaves it, the
    payment resells it."""
    on_commit = django_capture_on_commit_callbacks
    tier, _, ticket, (buyer,) = on_resale(shop, on_commit, buyers=1)
    returns_closed(tier.event_id)
    seam = Between(monkeypatch, returns_close_module, "claim_lock", lambda: claim_one(tier, buyer))

    report = returns_close_due()

    claim = seam.finish()
    ret = TicketReturn.objects.get(ticket=ticket)
    assert (report.closed, report.held) == ([], [str(ret.pk)])
    assert ret.status == "ON_RESALE" and reload(ticket).status == "ON_RESALE"
    pay_for(api, client, gateway, on_commit, claim)
    assert reload(ret).status == "RESOLD" and reload(ticket).status == "VOID"
    assert returns_close_due().closed == []
    assert failing(tier.event) == {}


@pytest.mark.django_db(transaction=True)
def test_a_claim_after_the_close_took_the_ticket_back_gets_nothing(
    monkeypatch, shop, django_capture_on_commit_callbacks
):
    """The close has moved the ticket's row back (not committed yet) when
    the buyer's claim looks for it: the claim skips the locked row and is
    told to retry, then that it is gone; the ticket is its holder's."""
    on_commit = django_capture_on_commit_callbacks
    tier, seller, ticket, (buyer,) = on_resale(shop, on_commit, buyers=1)
    returns_closed(tier.event_id)
    seam = Between(
        monkeypatch, returns_close_module, "send_on_commit", lambda: claim_one(tier, buyer)
    )

    report = returns_close_due()

    assert seam.state == "done"  # the claim did not wait for the close
    with pytest.raises(AppError) as refused:
        seam.finish()
    assert refused.value.code in ("busy", "sold_out")
    ret = TicketReturn.objects.get(ticket=ticket)
    assert report.closed == [str(ret.pk)] and ret.status == "WITHDRAWN"
    assert reload(ticket).status == "VALID"
    assert Ticket.objects.get(tier=tier).claim_id == seller.claim.pk
    with pytest.raises(AppError) as gone:
        claim_one(tier, buyer)
    assert gone.value.code == "sold_out"
    assert not Claim.objects.filter(customer=buyer.customer).exists()
    assert failing(tier.event) == {}


@pytest.mark.django_db(transaction=True)
def test_a_claim_racing_the_close_of_returns(
    api, client, gateway, shop, django_capture_on_commit_callbacks
):
    """Released together: whichever wins, the ticket ends valid for exactly
    one person, resold or withdrawn."""
    on_commit = django_capture_on_commit_callbacks
    for _ in range(2):
        tier, _, ticket, (buyer,) = on_resale(shop, on_commit, buyers=1)
        returns_closed(tier.event_id)
        claimed, report = race_calls(
            lambda kind, tier=tier, buyer=buyer: (
                claim_one(tier, buyer) if kind == "claim" else returns_close_due()
            ),
            [{"kind": "claim"}, {"kind": "close"}],
        ).results()
        ret = TicketReturn.objects.get(ticket=ticket)
        if isinstance(claimed, Claim):
            assert report.closed == [] and ret.status == "ON_RESALE"
            pay_for(api, client, gateway, on_commit, claimed)
            assert reload(ret).status == "RESOLD" and reload(ticket).status == "VOID"
        else:
            assert isinstance(claimed, AppError) and claimed.code in ("sold_out", "busy")
            assert report.closed == [str(ret.pk)] and ret.status == "WITHDRAWN"
            assert reload(ticket).status == "VALID"
        assert failing(tier.event) == {}
