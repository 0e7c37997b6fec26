"""Issued tickets: made when a claim becomes CONFIRMED, voided when it
leaves CONFIRMED. Both run inside the transaction that moves the claim, so a
claim and its tickets never disagree."""

from __future__ import annotations

import functools
import logging
import uuid
from datetime import datetime
from typing import Any

from django.db import connection
from django.utils import timezone

from claims.domain import ISSUED_TICKET_MACHINE, IssuedTicketStatus, ticket_code_new
from claims.models import Claim, IssuedTicket
from claims.services.resold import resales_complete
from claims.signals import claim_confirmed
from fairqueue.db import prepared_cursor
from fairqueue.news import send_on_commit

logger = logging.getLogger(__name__)

T = IssuedTicketStatus


def issued_tickets_issue(*, claim_id: uuid.UUID | str) -> list[IssuedTicket]:
    """One VALID ticket per seat of the (CONFIRMED) claim, each with a fresh
    code; seats already issued are skipped, so a repeated confirmation issues
    nothing twice. Ticket rows of the claim that were on resale are sold
    (``resales_complete``). After commit, ``claim_confirmed`` tells the apps
    above (the storefront sends the confirmation email)."""
    claim = Claim.objects.select_related("customer").get(pk=claim_id)
    issued_tickets_make(claim)
    issued = issued_tickets_live(claim_id=claim.pk)
    resales_complete(claim=claim, issued=issued)
    return issued


def issued_tickets_live(*, claim_id: uuid.UUID | str) -> list[IssuedTicket]:
    """The claim's tickets that are not void, by seat."""
    return list(
        IssuedTicket.objects.filter(claim_id=claim_id).exclude(status=T.VOID).order_by("seat")
    )


def issued_tickets_make(claim: Claim, *, issued: int | None = None) -> None:
    """``issued_tickets_issue`` for a claim the caller holds (its customer
    loaded), answering nothing: on a first confirmation one INSERT for every
    seat (the one-per-seat index skips a seat issued before). A code that
    collides (80 random bits: never in practice) is skipped by the INSERT
    like an issued seat; the rounds after give its seat another.
    ``issued``: that INSERT was sent already (``issued_tickets_after``), and
    issued this many seats."""
    now = timezone.now()
    seats = list(range(1, claim.quantity + 1))
    if issued is None:
        issued = len(_insert(claim, seats, now))
    if issued < len(seats):
        for _ in range(3):
            missing = _seats_missing(claim)
            if not missing:
                break
            _insert(claim, missing, now)
    send_on_commit(claim_confirmed, sender=Claim, claim_id=claim.pk)


def _seats_missing(claim: Claim) -> list[int]:
    issued = set(
        IssuedTicket.objects.filter(claim_id=claim.pk)
        .exclude(status=T.VOID)
        .values_list("seat", flat=True)
    )
    return [seat for seat in range(1, claim.quantity + 1) if seat not in issued]


_FIELDS = list(IssuedTicket._meta.concrete_fields)
_COLUMNS = ", ".join(f'"{f.column}"' for f in _FIELDS)
_ROW = "(" + ", ".join(["%s"] * len(_FIELDS)) + ")"


@functools.lru_cache(maxsize=8)
def _insert_sql(rows: int) -> str:
    # Names come from the model; values are always parameters. ON CONFLICT:
    # the one-per-seat index (a seat issued meanwhile stays as it is) or a
    # code taken; RETURNING says which seats were issued.
    return (
        f"INSERT INTO {IssuedTicket._meta.db_table} ({_COLUMNS}) "  # noqa: S608
        f"VALUES {', '.join([_ROW] * rows)} ON CONFLICT DO NOTHING RETURNING seat"
    )


@functools.lru_cache(maxsize=8)
def _insert_after_sql(statement: str, rows: int) -> str:
    """``statement`` (a data-modifying one, RETURNING one column) and the
    INSERT of ``rows`` tickets, in one statement: the tickets only when the
    statement returned its row. Answers its column and how many seats were
    issued. Each value is cast to its column's type: rows selected together
    leave Postgres no other way to tell a NULL's."""
    # Names and types come from the model; values are always parameters.
    values = ", ".join(f"CAST(%s AS {f.db_type(connection)})" for f in _FIELDS)
    select = " UNION ALL ".join([f"SELECT {values} FROM source"] * rows)  # noqa: S608
    return (
        f"WITH source AS ({statement}), "  # noqa: S608
        f"issued AS (INSERT INTO {IssuedTicket._meta.db_table} ({_COLUMNS}) "
        f"{select} ON CONFLICT DO NOTHING RETURNING seat) "
        "SELECT source.*, (SELECT count(*) FROM issued) FROM source"
    )


def issued_tickets_after(
    statement: str, params: list[Any], *, claim: Claim
) -> tuple[Any, int] | None:
    """Send ``statement`` (the claim's confirmation: a conditional UPDATE,
    RETURNING one column) with the INSERT of the claim's tickets, which
    happens only when the UPDATE moved the row. None when it did not (no
    ticket issued); else its column and how many seats were issued (fewer
    than the claim's quantity: ``issued_tickets_make`` issues the rest)."""
    now = timezone.now()
    seats = list(range(1, claim.quantity + 1))
    with prepared_cursor() as cursor:
        cursor.execute(
            _insert_after_sql(statement, len(seats)), [*params, *_values(claim, seats, now)]
        )
        row = cursor.fetchone()
    return None if row is None else (row[0], row[1])


def _insert(claim: Claim, seats: list[int], now: datetime) -> list[int]:
    """Issue these seats (one statement); the seats that were issued."""
    with prepared_cursor() as cursor:
        cursor.execute(_insert_sql(len(seats)), _values(claim, seats, now))
        return [row[0] for row in cursor.fetchall()]


def _values(claim: Claim, seats: list[int], now: datetime) -> list[Any]:
    """The new tickets' column values, seat after seat, each with a fresh code."""
    values: list[Any] = []
    for seat in seats:
        ticket = IssuedTicket(
            code=ticket_code_new(),
            claim_id=claim.pk,
            event_id=claim.event_id,
            tier_id=claim.tier_id,
            customer_id=claim.customer_id,
            holder_email=claim.customer.email,
            seat=seat,
            seat_label=claim.seats[seat - 1] if len(claim.seats) >= seat else "",
            issued_at=now,
        )
        values += [getattr(ticket, f.attname) for f in _FIELDS]
    return values


def issued_tickets_void(*, claim_ids: list[uuid.UUID], reason: str) -> int:
    """Every live ticket of these claims becomes VOID (conditional). Returns
    how many were voided."""
    voided = IssuedTicket.objects.filter(
        claim_id__in=claim_ids, status__in=ISSUED_TICKET_MACHINE.sources_of(T.VOID)
    ).update(status=T.VOID, voided_at=timezone.now(), void_reason=reason[:32])
    if voided:
        logger.info("voided %s issued tickets of claims %s (%s)", voided, claim_ids, reason)
    return voided
