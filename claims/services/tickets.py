"""The claim's side of the Postgres guard (invariant 1): the claim row and its
ticket rows written in one statement."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, connection

from claims.models import Claim
from inventory.services import PICK_FREE_SQL
from inventory.services import TABLE as TICKETS

ONE_PURCHASE_CONSTRAINT = "claim_one_purchase_per_event"

_CLAIM_FIELDS = list(Claim._meta.concrete_fields)
_COLUMNS = ", ".join(f'"{f.column}"' for f in _CLAIM_FIELDS)
_PLACEHOLDERS = ", ".join(["%s"] * len(_CLAIM_FIELDS))
# Names come from the models; values are always parameters.
_INSERT_CLAIM_SQL = f"INSERT INTO {Claim._meta.db_table} ({_COLUMNS}) VALUES ({_PLACEHOLDERS})"  # noqa: S608

# The claim's hot path in one statement (one round trip): insert the claim,
# then give it its ticket rows, marked with the Redis reservation that fronted
# it. The one-purchase index refuses the INSERT, and so the whole statement,
# for a customer who already holds a purchase.
_INSERT_AND_TAKE_SQL = f"""
WITH new_claim AS ({_INSERT_CLAIM_SQL} RETURNING id),
{PICK_FREE_SQL.format(skip="SKIP LOCKED")}
UPDATE {TICKETS} AS t SET claim_id = new_claim.id, reservation_id = %s
FROM picked, new_claim WHERE t.id = picked.id
"""  # noqa: S608


def _claim_values(claim: Claim) -> list[Any]:
    # Plain attribute values (UUIDs, ints, strings, aware datetimes) that
    # psycopg adapts itself: cheaper than each field's prep on the hot path.
    # The caller sets every value, created_at included (no auto_now_add here).
    return [getattr(claim, f.attname) for f in _CLAIM_FIELDS]


def claim_insert(claim: Claim, *, reservation_id: str, take_tickets: bool = True) -> int:
    """INSERT the (unsaved, fully filled in) claim and give it up to
    ``claim.quantity`` free ticket rows of its tier; returns how many it got.
    Must run inside the claim's transaction: fewer than asked for means roll
    back.
    ``take_tickets=False`` inserts the claim alone (the guard-off tests, and
    reserved seating, which takes its seats after)."""
    taken: int = 0
    with connection.cursor() as cursor:
        if take_tickets:
            cursor.execute(
                _INSERT_AND_TAKE_SQL,
                [*_claim_values(claim), claim.tier_id, claim.quantity, reservation_id],
            )
            taken = cursor.rowcount
        else:
            cursor.execute(_INSERT_CLAIM_SQL, _claim_values(claim))
    claim._state.adding = False
    claim._state.db = connection.alias
    return taken


def is_one_purchase_violation(exc: IntegrityError) -> bool:
    diag = getattr(exc.__cause__, "diag", None)
    return getattr(diag, "constraint_name", None) == ONE_PURCHASE_CONSTRAINT
