"""The row-lock helpers of fairqueue/locks.py against real Postgres: each
waits for a row another transaction holds no longer than the lock timeout
(then Busy: 503 + Retry-After), even when its caller set no timeout; a
non-blocking take passes held rows over; each locks only the rows its name
says."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.models import QuerySet
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from claims.models import Claim
from claims.services import claim_lock
from customers.models import OneTimeCode
from events.models import Event, TicketTier
from fairqueue import locks
from fairqueue.errors import Busy
from inventory.models import Ticket
from payments.models import Refund
from payments.services.outcomes import payment_lock, payment_lock_by_reference
from queueing.models import AdmissionState
from tests.support.payments import make_claim, payment_row
from tests.support.races import race, rows_locked
from tests.support.sales import on_sale_reserved

pytestmark = pytest.mark.django_db(transaction=True)


def world() -> dict[str, Any]:
    tier = on_sale_reserved(rows=1, seats_per_row=3)
    payment = payment_row(reference="lock-helpers", amount=5000, status="CONFIRMED")
    refund = Refund.objects.create(
        payment=payment, amount=5000, currency="NGN", requested_by="auto",
        next_check_at=timezone.now(),
    )  # fmt: skip
    AdmissionState.objects.create(event=tier.event)
    code = OneTimeCode.objects.create(
        email="a@example.test", code_hash="x", expires_at=timezone.now() + timedelta(minutes=5)
    )
    return {"tier": tier, "payment": payment, "refund": refund, "code": code}


# helper -> (the rows it is given, called how)
CASES: dict[str, Callable[[dict[str, Any]], tuple[QuerySet, Callable[[QuerySet], Any]]]] = {
    "event row": lambda w: (
        Event.objects.filter(pk=w["tier"].event_id), locks.event_row_lock,
    ),
    "event row, no key": lambda w: (
        Event.objects.filter(pk=w["tier"].event_id),
        lambda rows: locks.event_row_lock(rows, no_key=True),
    ),
    "admission state": lambda w: (
        AdmissionState.objects.filter(event_id=w["tier"].event_id), locks.admission_state_lock,
    ),
    "tier row": lambda w: (TicketTier.objects.filter(pk=w["tier"].pk), locks.tier_row_lock),
    "payment row": lambda w: (
        type(w["payment"]).objects.filter(pk=w["payment"].pk), locks.payment_row_lock,
    ),
    "refund row": lambda w: (Refund.objects.filter(pk=w["refund"].pk), locks.refund_row_lock),
    "claim row": lambda w: (
        Claim.objects.filter(pk=w["payment"].claim_id), locks.claim_row_lock,
    ),
    "ticket rows": lambda w: (
        Ticket.objects.filter(tier=w["tier"]),
        lambda rows: locks.ticket_rows_lock(rows, limit=3),
    ),
    "seat rows": lambda w: (Ticket.objects.filter(tier=w["tier"]), locks.seat_rows_lock),
    "sign-in code": lambda w: (
        OneTimeCode.objects.filter(pk=w["code"].pk), locks.sign_in_code_lock,
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_a_held_row_is_busy_after_the_lock_timeout_not_a_hang(case, settings):
    settings.DB_LOCK_TIMEOUT_MS = 200
    rows, take = CASES[case](world())
    with rows_locked(rows), pytest.raises(Busy) as busy, transaction.atomic():
        take(rows)  # no pg_lock_timeout around it: the helper brings its own
    assert (busy.value.status, busy.value.code, busy.value.retry_after) == (503, "busy", 1)


@pytest.mark.parametrize("case", list(CASES))
def test_a_free_row_is_locked_by_this_transaction(case):
    rows, take = CASES[case](world())
    with transaction.atomic():
        taken = take(rows)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() "
                "AND locktype = 'transactionid'"
            )
            (holds,) = cursor.fetchone()
    assert taken not in (None, [])
    assert holds == 1  # a row lock needs the transaction's id: it has one now


def test_inside_a_lock_timeout_block_a_helper_adds_no_statement():
    w = world()
    claims = Claim.objects.filter(pk=w["payment"].claim_id)
    with transaction.atomic():
        with CaptureQueriesContext(connection) as alone:
            locks.claim_row_lock(claims)
        with locks.pg_lock_timeout(), CaptureQueriesContext(connection) as inside:
            locks.claim_row_lock(claims)
    assert (len(alone), len(inside)) == (3, 1)  # set the limit, lock, restore; or lock


def test_seats_taken_without_waiting_leave_held_seats_out_and_never_wait(settings):
    settings.DB_LOCK_TIMEOUT_MS = 200
    tier = on_sale_reserved(rows=1, seats_per_row=3)
    seats = Ticket.objects.filter(tier=tier).order_by("id")
    held = seats.first()
    with (
        rows_locked(Ticket.objects.filter(pk=held.pk)),
        transaction.atomic(),
        CaptureQueriesContext(connection) as statements,
    ):
        got = locks.seat_rows_lock(seats.values_list("label", flat=True), skip_locked=True)
    assert got == [s.label for s in seats if s.pk != held.pk]
    assert len(statements) == 1  # no lock timeout to set: SKIP LOCKED never waits


def test_a_helper_locks_only_the_rows_its_name_says():
    w = world()
    with transaction.atomic(), pytest.raises(TypeError, match=r"claims\.Claim rows, not"):
        locks.claim_row_lock(Refund.objects.filter(pk=w["refund"].pk))


def locked_elsewhere(rows: QuerySet) -> bool:
    """Does another transaction hold one of ``rows``? Asked from another
    connection, without waiting (NOWAIT)."""

    def ask(_: object) -> bool:
        try:
            with transaction.atomic():
                list(rows.select_for_update(nowait=True))
        except DatabaseError:
            return True
        return False

    (answer,) = race(ask, [None])
    return bool(answer)


def test_the_claim_row_lock_leaves_the_customer_row_it_reads_free():
    """The claim's customer is read with it (select_related) but not
    locked: inserts that reference the customer (their foreign key takes
    FOR KEY SHARE on it) never wait for a payment in flight."""
    claim = make_claim()
    with transaction.atomic():
        locked = locks.claim_row_lock(Claim.objects.select_related("customer").filter(pk=claim.pk))
        assert locked.customer.email == claim.customer.email
        claim_held = locked_elsewhere(Claim.objects.filter(pk=claim.pk))
        customer_held = locked_elsewhere(type(claim.customer).objects.filter(pk=claim.customer_id))
    assert (claim_held, customer_held) == (True, False)


# The row locks written once in SQL (the payment's hot path): the same limits.
SQL_LOCKS: dict[str, Callable[[Any], tuple[QuerySet, Callable[[], Any]]]] = {
    "claim row": lambda p: (
        Claim.objects.filter(pk=p.claim_id), lambda: claim_lock(claim_id=p.claim_id),
    ),
    "payment row": lambda p: (
        type(p).objects.filter(pk=p.pk), lambda: payment_lock(payment_id=p.pk),
    ),
    "payment row by reference": lambda p: (
        type(p).objects.filter(pk=p.pk), lambda: payment_lock_by_reference(reference=p.reference),
    ),
}  # fmt: skip


@pytest.mark.parametrize("first", [True, False], ids=["first statement", "after another"])
@pytest.mark.parametrize("case", list(SQL_LOCKS))
def test_a_sql_row_lock_is_busy_after_the_lock_timeout(case, first, settings):
    """As a ``locked_transaction``'s first statement the lock sets the
    block's limit itself; after another statement the limit is in force."""
    settings.DB_LOCK_TIMEOUT_MS = 200
    payment = payment_row(reference=f"sql-lock-{first}", amount=5000, status="PENDING")
    rows, take = SQL_LOCKS[case](payment)
    with rows_locked(rows), pytest.raises(Busy), locks.locked_transaction():
        if not first:
            Event.objects.exists()
        take()


def lock_timeout() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW lock_timeout")
        return cursor.fetchone()[0]


def test_a_locked_transaction_that_starts_with_a_sql_lock_spends_no_statement_on_its_limit(
    settings,
):
    settings.DB_LOCK_TIMEOUT_MS = 250
    claim = make_claim()
    with locks.locked_transaction(), CaptureQueriesContext(connection) as statements:
        assert claim_lock(claim_id=claim.pk).pk == claim.pk
        limit = lock_timeout()
    assert limit == "250ms"
    assert len(statements) == 2  # the lock, which sets the limit; the question
    assert statements[0]["sql"].startswith("SELECT set_config('lock_timeout', '250ms', true), c.")
    assert statements[0]["sql"].endswith("FOR UPDATE OF c")


def test_a_locked_transaction_sets_its_limit_before_any_other_first_statement(settings):
    """A first statement that is no SQL lock (or a SQL lock that found no
    row, so set nothing) is preceded by the limit."""
    settings.DB_LOCK_TIMEOUT_MS = 250
    with locks.locked_transaction(), CaptureQueriesContext(connection) as statements:
        assert payment_lock_by_reference(reference="nobody-has-it") is None
        limit = lock_timeout()
    assert limit == "250ms"
    assert [s["sql"] for s in statements][1:] == [
        "SELECT set_config('lock_timeout', '250ms', true)",
        "SHOW lock_timeout",
    ]
