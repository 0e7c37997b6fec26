"""Two late successes re-instating released claims at the same moment, on
real Postgres, each in its own thread and transaction (the webhook service).

A re-instate first takes free ticket rows with SKIP LOCKED; when claims in
flight hold some, it waits for the rest. Waiting while holding rows the
other re-instate waits for is a deadlock: one webhook would fail (a 500, the
gateway delivering it again later). The interleaving is forced: rows held by
claims in flight leave each re-instate one row short after its first pass,
and both then wait."""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

import pytest
from django.db import connection, transaction

from claims.domain import ClaimStatus, ReleaseReason
from claims.services import claim_release, outcome
from inventory.models import Ticket
from payments.services import payment_webhook_receive
from tests.support.factories import CustomerFactory, EventFactory, TierFactory
from tests.support.payments import held_tickets, make_claim, pending_payment, reload
from tests.support.races import Aside, waiting_on_locks

pytestmark = pytest.mark.django_db(transaction=True)


class InFlight:
    """A claim in flight elsewhere: a transaction holding ticket rows locked
    until ``end`` (then it rolls back, and they are free again)."""

    def __init__(self, ticket_ids: list[int]) -> None:
        locked, self._end = threading.Event(), threading.Event()

        def hold() -> None:
            try:
                with transaction.atomic():
                    rows = Ticket.objects.select_for_update().filter(pk__in=ticket_ids)
                    assert len(list(rows.values_list("pk", flat=True))) == len(ticket_ids)
                    locked.set()
                    self._end.wait(timeout=60)
                    transaction.set_rollback(True)
            finally:
                connection.close()

        self._thread = threading.Thread(target=hold)
        self._thread.start()
        assert locked.wait(timeout=15)

    def end(self) -> None:
        self._end.set()
        self._thread.join(timeout=15)
        assert not self._thread.is_alive()


def wait_for(condition, what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.02)


def test_two_late_successes_re_instate_together_without_a_deadlock(
    api, sandbox, monkeypatch
):
    tier = TierFactory(inventory=4, event=EventFactory(max_tickets_per_customer=2))
    late: list[tuple[Any, bytes, str]] = []
    for _ in range(2):
        claim = make_claim(tier=tier, customer=CustomerFactory(), quantity=2)
        payment = pending_payment(api, claim)
        claim_release(claim_id=claim.pk, reason=ReleaseReason.EXPIRED)
        sandbox.pay(payment.reference, send_webhook=False)
        late.append((payment, *sandbox.webhook(payment.reference)))
    _, t2, t3, t4 = Ticket.objects.filter(tier=tier).order_by("pk").values_list("pk", flat=True)

    # Each re-instate stops at the pass that waits until both have got there.
    real_take = outcome.tickets_take
    arrived: queue.SimpleQueue[str] = queue.SimpleQueue()
    go = threading.Event()

    def take(**kwargs: Any) -> int:
        if not kwargs["skip_locked"]:
            arrived.put(threading.current_thread().name)
            assert go.wait(timeout=30)
        return real_take(**kwargs)

    monkeypatch.setattr(outcome, "tickets_take", take)

    def deliver(index: int) -> Aside:
        _, body, signature = late[index]
        return Aside(lambda: payment_webhook_receive(body=body, signature=signature))

    seen: list[str] = []

    def reached_the_wait(aside: Aside) -> bool:
        while not arrived.empty():
            seen.append(arrived.get())
        return aside.thread.name in seen or aside.done.is_set()

    others = InFlight([t3, t4])  # held until the end
    briefly = InFlight([t2])
    first = deliver(0)  # its first pass can take the first row only
    wait_for(lambda: reached_the_wait(first), "the first re-instate got one row and waits")
    assert first.thread.name in seen
    briefly.end()  # t2 is free
    second = deliver(1)
    wait_for(lambda: reached_the_wait(second), "the second re-instate took its first pass")

    go.set()
    # Until the claims in flight end, a re-instate still short of rows waits for them.
    wait_for(
        lambda: second.done.is_set() and (first.done.is_set() or waiting_on_locks() >= 1),
        "the second re-instate finished",
    )
    others.end()

    errors = []
    for aside in (first, second):
        try:
            aside.finish()
        except Exception as exc:  # a deadlock shows here
            errors.append(exc)
    assert errors == []
    for payment, _, _ in late:
        payment = reload(payment)
        assert payment.status == "CONFIRMED"
        claim = reload(payment.claim)
        assert (claim.status, held_tickets(claim)) == (ClaimStatus.CONFIRMED, 2)
    assert Ticket.objects.filter(tier=tier, claim__isnull=True).count() == 0
