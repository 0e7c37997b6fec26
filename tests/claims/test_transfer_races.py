"""Transfers against cancels and returns, on real Postgres and Redis
(threads, each on its own connection). Creating, cancelling and accepting a
transfer each take the purchase's claim row and move the transfer only from
PENDING, so of an acceptance and a cancel exactly one wins, and no transfer
is made while a return is. Each guard is first shown missing (the race
happens, forced into one interleaving), then holding."""

from __future__ import annotations

import time
from typing import Any

import pytest

from claims.models import Claim, IssuedTicket, TicketReturn, TicketTransfer
from claims.services import (
    resale,
    ticket_return,
    ticket_transfer_accept,
    ticket_transfer_cancel,
    ticket_transfer_create,
)
from claims.services import transfers as transfers_module
from fairqueue.errors import AppError, Conflict
from tests.claims.resale_support import admitted, resale_event
from tests.support.factories import CustomerFactory
from tests.support.invariants import failing
from tests.support.races import Aside, Between, race_calls

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 12


@pytest.fixture(autouse=True)
def _wide_limits(settings):
    """These tests make many transfers of one purchase: no limit in the way."""
    settings.TRANSFER_TICKET_LIMITS = "1000/hour"
    settings.TRANSFER_SENDER_LIMITS = "1000/hour"
    settings.TRANSFER_MAILBOX_LIMITS = "1000/hour"


def guard_off(monkeypatch) -> None:
    """The transfer code without its guard: the purchase's row read, not
    locked, and a transfer's moves made whatever its status."""

    def unlocked(*, claim_id: Any, **_: Any) -> Claim:
        return Claim.objects.get(pk=claim_id)

    def unconditional(transfer_id: Any, *, status: str, at: Any) -> bool:
        TicketTransfer.objects.filter(pk=transfer_id).update(status=status, ended_at=at)
        return True

    monkeypatch.setattr(transfers_module, "claim_lock", unlocked)
    monkeypatch.setattr(transfers_module, "_transfer_end", unconditional)


class AfterClaimLock:
    """The first ``claim_lock`` of the transfer code returns (the row is
    held, or only read with the guard off), then ``action`` runs in another
    thread until it finished or blocked on a Postgres lock. Its own calls
    pass straight through."""

    def __init__(self, monkeypatch, action) -> None:
        real = transfers_module.claim_lock
        self.aside: Aside | None = None
        self.started = False
        self.state = ""

        def wrapper(**kwargs: Any) -> Claim:
            claim = real(**kwargs)
            if not self.started:
                self.started = True  # before the thread starts: its calls pass
                self.aside = Aside(action)
                self.state = self.aside.settle()
            return claim

        monkeypatch.setattr(transfers_module, "claim_lock", wrapper)

    def finish(self) -> Any:
        assert self.aside is not None, "the code under test never took the claim lock"
        return self.aside.finish()


def answered(call, *, retries: int = 50) -> Any:
    """A well-behaved client: 503 busy means "retry shortly"."""
    for _ in range(retries):
        try:
            return call()
        except AppError as exc:
            if exc.code != "busy":
                return exc
            time.sleep(0.02)
    raise AssertionError("still busy after retries")


def outcome(result: Any) -> str:
    if isinstance(result, AppError):
        return f"{result.status} {result.code}"
    return "ok"


def offered(seller, ticket, friend) -> TicketTransfer:
    return ticket_transfer_create(
        code=ticket.code, customer_id=seller.customer.pk, email=friend.email
    )


def assert_accepted(transfer, ticket, friend) -> None:
    transfer.refresh_from_db()
    ticket.refresh_from_db()
    assert transfer.status == "ACCEPTED"
    assert (ticket.status, ticket.void_reason) == ("VOID", "transferred")
    (new,) = IssuedTicket.objects.filter(customer=friend)
    assert (new.status, new.replaces_id, transfer.new_ticket_id) == ("VALID", ticket.pk, new.pk)


def assert_cancelled(transfer, ticket, friend) -> None:
    transfer.refresh_from_db()
    ticket.refresh_from_db()
    assert (transfer.status, transfer.new_ticket_id) == ("CANCELLED", None)
    assert ticket.status == "VALID"
    assert not IssuedTicket.objects.filter(customer=friend).exists()
    assert not Claim.objects.filter(customer=friend).exists()


# --- an acceptance against a cancel ------------------------------------------------


def test_race_shown_without_the_guard_the_sender_is_told_cancelled_and_the_ticket_moves(
    shop, monkeypatch
):
    tier = resale_event(tickets=2)
    (seller_in,) = admitted(tier.event, 1)
    seller = shop(tier, seller_in)
    (ticket,) = seller.tickets()
    friend = CustomerFactory()
    transfer = offered(seller, ticket, friend)
    guard_off(monkeypatch)
    seam = AfterClaimLock(
        monkeypatch,
        lambda: ticket_transfer_cancel(transfer_id=transfer.pk, customer_id=seller.customer.pk),
    )

    ticket_transfer_accept(transfer_id=transfer.pk, customer_id=friend.pk)

    # The cancel ran inside the acceptance and was answered "cancelled"...
    assert seam.state == "done" and seam.finish() is None
    # ...and the recipient has the ticket all the same.
    assert_accepted(transfer, ticket, friend)


def test_a_cancel_during_an_acceptance_waits_and_is_refused(shop, monkeypatch):
    tier = resale_event(tickets=2)
    (seller_in,) = admitted(tier.event, 1)
    seller = shop(tier, seller_in)
    (ticket,) = seller.tickets()
    friend = CustomerFactory()
    transfer = offered(seller, ticket, friend)
    seam = AfterClaimLock(
        monkeypatch,
        lambda: ticket_transfer_cancel(transfer_id=transfer.pk, customer_id=seller.customer.pk),
    )

    ticket_transfer_accept(transfer_id=transfer.pk, customer_id=friend.pk)

    assert seam.state == "blocked"  # on the purchase's row
    with pytest.raises(Conflict) as refused:
        seam.finish()
    assert (refused.value.status, refused.value.code) == (409, "transfer_not_pending")
    assert_accepted(transfer, ticket, friend)
    kinds = list(ticket.events.order_by("id").values_list("kind", flat=True))
    assert kinds == ["transfer_offered", "transferred"]  # no "transfer_cancelled"
    assert failing(tier.event) == {}


def test_an_acceptance_during_a_cancel_waits_and_is_refused(shop, monkeypatch):
    tier = resale_event(tickets=2)
    (seller_in,) = admitted(tier.event, 1)
    seller = shop(tier, seller_in)
    (ticket,) = seller.tickets()
    friend = CustomerFactory()
    transfer = offered(seller, ticket, friend)
    seam = AfterClaimLock(
        monkeypatch,
        lambda: ticket_transfer_accept(transfer_id=transfer.pk, customer_id=friend.pk),
    )

    ticket_transfer_cancel(transfer_id=transfer.pk, customer_id=seller.customer.pk)

    assert seam.state == "blocked"
    with pytest.raises(Conflict) as refused:
        seam.finish()
    assert (refused.value.status, refused.value.code) == (409, "transfer_not_pending")
    assert_cancelled(transfer, ticket, friend)
    assert failing(tier.event) == {}


def test_acceptance_and_cancel_raced_many_times_exactly_one_wins(shop):
    tier = resale_event(tickets=ROUNDS, max_tickets_per_customer=ROUNDS)
    (seller_in,) = admitted(tier.event, 1)
    seller = shop(tier, seller_in, quantity=ROUNDS)
    winners = []
    for ticket in seller.tickets():  # one round per ticket
        friend = CustomerFactory()
        transfer = offered(seller, ticket, friend)
        results = race_calls(
            lambda kind, transfer=transfer, friend=friend: answered(
                (lambda: ticket_transfer_accept(transfer_id=transfer.pk, customer_id=friend.pk))
                if kind == "accept"
                else (
                    lambda: ticket_transfer_cancel(
                        transfer_id=transfer.pk, customer_id=seller.customer.pk
                    )
                )
            ),
            [{"kind": "accept"}, {"kind": "cancel"}],
        ).results()
        accepted, cancelled = (outcome(r) for r in results)
        assert sorted([accepted, cancelled]) == ["409 transfer_not_pending", "ok"], results
        if accepted == "ok":
            winners.append("accept")
            assert_accepted(transfer, ticket, friend)
        else:
            winners.append("cancel")
            assert_cancelled(transfer, ticket, friend)
    assert len(winners) == ROUNDS
    assert not TicketTransfer.objects.filter(status="PENDING").exists()
    assert failing(tier.event) == {}


# --- a new transfer against a return ------------------------------------------------


def test_race_shown_without_the_lock_a_transfer_is_made_while_a_return_is(shop, monkeypatch):
    tier = resale_event(tickets=2)
    (seller_in,) = admitted(tier.event, 1)
    seller = shop(tier, seller_in)
    (ticket,) = seller.tickets()
    friend = CustomerFactory()
    guard_off(monkeypatch)
    # The transfer has found the ticket VALID; the return runs before it is written.
    seam = Between(
        monkeypatch,
        transfers_module,
        "_still_sendable",
        lambda: ticket_return(code=ticket.code, customer_id=seller.customer.pk),
    )

    transfer = offered(seller, ticket, friend)

    assert seam.state == "done" and isinstance(seam.finish(), TicketReturn)
    ticket.refresh_from_db()
    transfer.refresh_from_db()
    # On resale and being sent to someone at once.
    assert (ticket.status, transfer.status) == ("ON_RESALE", "PENDING")


def test_a_return_during_a_new_transfer_waits_and_is_refused(shop, monkeypatch):
    tier = resale_event(tickets=2)
    (seller_in,) = admitted(tier.event, 1)
    seller = shop(tier, seller_in)
    (ticket,) = seller.tickets()
    friend = CustomerFactory()
    seam = Between(
        monkeypatch,
        transfers_module,
        "_still_sendable",
        lambda: ticket_return(code=ticket.code, customer_id=seller.customer.pk),
    )

    transfer = offered(seller, ticket, friend)

    assert seam.state == "blocked"  # on the purchase's row
    with pytest.raises(Conflict) as refused:
        seam.finish()
    assert refused.value.code == "transfer_pending"
    ticket.refresh_from_db()
    assert (ticket.status, reload_status(transfer)) == ("VALID", "PENDING")
    assert not TicketReturn.objects.exists()
    assert failing(tier.event) == {}


def test_a_new_transfer_during_a_return_waits_and_is_refused(shop, monkeypatch):
    tier = resale_event(tickets=2)
    (seller_in,) = admitted(tier.event, 1)
    seller = shop(tier, seller_in)
    (ticket,) = seller.tickets()
    friend = CustomerFactory()
    # The return holds the purchase's row; the transfer found the ticket VALID.
    seam = Between(monkeypatch, resale, "claim_lock", lambda: offered(seller, ticket, friend))

    ticket_return(code=ticket.code, customer_id=seller.customer.pk)

    assert seam.state == "blocked"
    with pytest.raises(Conflict) as refused:
        seam.finish()
    assert refused.value.code == "ticket_on_resale"
    ticket.refresh_from_db()
    assert ticket.status == "ON_RESALE"
    assert not TicketTransfer.objects.exists()
    assert not ticket.events.filter(kind="transfer_offered").exists()
    assert failing(tier.event) == {}


def test_new_transfer_and_return_raced_never_leave_a_ticket_on_resale_being_sent(shop):
    tier = resale_event(tickets=ROUNDS, max_tickets_per_customer=ROUNDS)
    (seller_in,) = admitted(tier.event, 1)
    seller = shop(tier, seller_in, quantity=ROUNDS)
    seen = set()
    for ticket in seller.tickets():  # one round per ticket
        friend = CustomerFactory()
        results = race_calls(
            lambda kind, ticket=ticket, friend=friend: answered(
                (lambda: offered(seller, ticket, friend))
                if kind == "transfer"
                else (lambda: ticket_return(code=ticket.code, customer_id=seller.customer.pk))
            ),
            [{"kind": "transfer"}, {"kind": "return"}],
        ).results()
        sent, returned = (outcome(r) for r in results)
        ticket.refresh_from_db()
        pending = TicketTransfer.objects.filter(ticket=ticket, status="PENDING").exists()
        on_resale = TicketReturn.objects.filter(ticket=ticket, status="ON_RESALE").exists()
        assert not (pending and on_resale), results
        if sent == "ok":
            seen.add("transfer")
            assert returned == "409 transfer_pending", results
            assert (ticket.status, pending, on_resale) == ("VALID", True, False)
        else:
            seen.add("return")
            assert (sent, returned) == ("409 ticket_on_resale", "ok"), results
            assert (ticket.status, pending, on_resale) == ("ON_RESALE", False, True)
    assert not IssuedTicket.objects.filter(
        status="ON_RESALE", transfers_out__status="PENDING"
    ).exists()
    assert failing(tier.event) == {}


def reload_status(transfer: TicketTransfer) -> str:
    return TicketTransfer.objects.values_list("status", flat=True).get(pk=transfer.pk)
