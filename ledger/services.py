"""Writing and reading a purchase's account. Every entry is written under
the purchase's claim row lock (or, for a payment's charge, in the statement
that moves the payment), so a decision read from the balance holds until
the transaction that acted on it commits.

This module is the one writer of the account's table."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection
from django.utils import timezone

from ledger.domain import Balance, Move, balance_of
from ledger.models import AccountEntry

_FIELDS = [f for f in AccountEntry._meta.concrete_fields if not f.primary_key]
_TABLE = AccountEntry._meta.db_table


def account_post(
    *,
    claim_id: uuid.UUID | str,
    moves: Iterable[Move],
    currency: str,
    actor: str,
    payment_id: uuid.UUID | str | None = None,
    gateway_refund_id: str = "",
    ref: str = "",
    note: str = "",
) -> list[AccountEntry]:
    """Append ``moves`` to the purchase's account (the caller holds its claim
    row lock, or the payment's that leads to it)."""
    now = timezone.now()
    entries = [
        AccountEntry(
            claim_id=claim_id,
            kind=move.kind.value,
            amount=move.amount,
            currency=currency[:3].upper(),
            debit=str(move.debit),
            credit=str(move.credit),
            tickets=move.tickets,
            payment_id=payment_id,
            refund_id=move.refund_id,
            gateway_refund_id=gateway_refund_id[:64],
            ref=str(ref)[:64],
            actor=actor[:150],
            note=note[:300],
            created_at=now,
        )
        for move in moves
    ]
    return AccountEntry.objects.bulk_create(entries) if entries else []


def _move(row: Sequence[Any]) -> Move:
    kind, amount, debit, credit, tickets, refund_id = row
    return Move(kind, amount, debit, credit, tickets, str(refund_id) if refund_id else None)


_BALANCE_SQL = (
    f"SELECT kind, amount, debit, credit, tickets, refund_id FROM {_TABLE} "  # noqa: S608
    "WHERE claim_id = %s ORDER BY id"
)


def account_balance(*, claim_id: uuid.UUID | str, face: int) -> Balance:
    """The purchase's balance (``face``: one of its tickets' value)."""
    with connection.cursor() as cursor:
        cursor.execute(_BALANCE_SQL, [claim_id])
        return balance_of((_move(row) for row in cursor.fetchall()), face=face)


def account_entries(*, claim_id: uuid.UUID | str) -> list[AccountEntry]:
    return list(AccountEntry.objects.filter(claim_id=claim_id).order_by("id"))


@functools.cache
def charge_sql(*, with_tickets: bool) -> str:
    """An INSERT of a charge entry that selects from a CTE named ``moved``
    (a payment's conditional UPDATE): written only when the payment moved,
    in the same statement. ``with_tickets``: the entry's tickets are its
    claim's quantity (parameter: the claim's id), read in that statement."""
    values = []
    for field in _FIELDS:
        if field.name == "tickets" and with_tickets:
            values.append("(SELECT quantity FROM claims_claim WHERE id = %s)")
        else:
            values.append("%s")
    columns = ", ".join(f'"{f.column}"' for f in _FIELDS)
    return f"INSERT INTO {_TABLE} ({columns}) SELECT {', '.join(values)} FROM moved"  # noqa: S608


def charge_params(
    *,
    claim_id: uuid.UUID | str,
    payment_id: uuid.UUID | str,
    amount: int,
    currency: str,
    actor: str,
    with_tickets: bool,
) -> list[Any]:
    """The parameters of ``charge_sql``, in its order."""
    values: dict[str, Any] = {
        "claim_id": claim_id,
        "kind": "charge",
        "amount": amount,
        "currency": currency[:3].upper(),
        "debit": "",
        "credit": "held",
        "tickets": claim_id if with_tickets else 0,
        "payment_id": payment_id,
        "refund_id": None,
        "gateway_refund_id": "",
        "ref": "",
        "actor": actor[:150],
        "note": "",
        "created_at": timezone.now(),
    }
    return [values[f.attname] for f in _FIELDS]
