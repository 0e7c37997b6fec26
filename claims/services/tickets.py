"""The claim's side of the Postgres guard (invariant 1): the claim row and its
ticket rows written in one statement, with the admission used up in the same
statement on the hot path."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection

from claims.models import Claim
from fairqueue.db import prepared_cursor
from inventory.services import TABLE as TICKETS
from queueing.domain import QueueStatus
from queueing.models import QueueEntry
from queueing.services.clock import WINDOW_OPEN_SQL

ONE_PURCHASE_CONSTRAINT = "claim_one_purchase_per_event"

_CLAIM_FIELDS = list(Claim._meta.concrete_fields)
_COLUMNS = ", ".join(f'"{f.column}"' for f in _CLAIM_FIELDS)
_PLACEHOLDERS = ", ".join(["%s"] * len(_CLAIM_FIELDS))
# Names come from the models; values are always parameters.
_INSERT_CLAIM_SQL = f"INSERT INTO {Claim._meta.db_table} ({_COLUMNS}) VALUES ({_PLACEHOLDERS})"  # noqa: S608

def _claim_values(claim: Claim) -> list[Any]:
    # Plain attribute values (UUIDs, ints, strings, aware datetimes) that
    # psycopg adapts itself: cheaper than each field's prep on the hot path.
    # The caller sets every value, created_at included (no auto_now_add here).
    return [getattr(claim, f.attname) for f in _CLAIM_FIELDS]


def claim_insert(claim: Claim) -> None:
    """INSERT the (unsaved, fully filled in) claim row alone, inside the
    claim's transaction: reserved seating takes its seats after it (and the
    guard-off tests take none). General admission does it all in one
    statement (``claim_insert_admitted``)."""
    with connection.cursor() as cursor:
        cursor.execute(_INSERT_CLAIM_SQL, _claim_values(claim))
    claim._state.adding = False
    claim._state.db = connection.alias


def is_one_purchase_violation(exc: IntegrityError) -> bool:
    diag = getattr(exc.__cause__, "diag", None)
    return getattr(diag, "constraint_name", None) == ONE_PURCHASE_CONSTRAINT


# --- the claim in one statement ------------------------------------------------------
# A claim's whole Postgres side in one statement, so in one round trip and
# without BEGIN/COMMIT (a statement is atomic on its own): the admission is
# checked (this customer's entry of this event, ADMITTED, its window open),
# the ticket rows are taken (SKIP LOCKED), and only when all of them were,
# the entry moves ADMITTED -> COMPLETED, the claim is inserted and the rows
# are given to it. The entry's UPDATE re-checks the row under its lock, so a
# concurrent expiry or a second claim of the same admission wins or loses
# cleanly; the one-purchase index refuses the INSERT, and so the whole
# statement, for a customer who already holds a purchase.
# It takes general admission tickets only (no seat label, not blocked): the
# caller chose this way from a tier cached for a second, and a tier turned
# into reserved seating meanwhile must not have its seats, house seats above
# all, handed out here; its claim is refused as short (busy, retry) and the
# retry, with the cache renewed, takes seats the seating way.
_Q = QueueEntry._meta.db_table
_NAMED = ", ".join(f"%(c_{f.attname})s" for f in _CLAIM_FIELDS)
_CLAIM_ADMITTED_SQL = f"""
WITH admitted AS MATERIALIZED (
    SELECT id FROM {_Q}
    WHERE id = %(entry)s AND event_id = %(event)s AND customer_id = %(customer)s
      AND status = %(admitted)s AND {WINDOW_OPEN_SQL}
),
picked AS MATERIALIZED (
    SELECT id FROM {TICKETS}
    WHERE tier_id = %(tier)s AND claim_id IS NULL AND label IS NULL AND NOT blocked
      AND EXISTS (SELECT 1 FROM admitted)
    LIMIT %(quantity)s
    FOR UPDATE SKIP LOCKED
),
completed AS (
    UPDATE {_Q} SET status = %(completed)s, finished_at = %(now)s
    WHERE id = %(entry)s AND status = %(admitted)s AND {WINDOW_OPEN_SQL}
      AND (SELECT count(*) FROM picked) = %(quantity)s
    RETURNING id
),
new_claim AS (
    INSERT INTO {Claim._meta.db_table} ({_COLUMNS}) SELECT {_NAMED} FROM completed
    RETURNING id
),
taken AS (
    UPDATE {TICKETS} AS t SET claim_id = new_claim.id, reservation_id = %(reservation)s
    FROM new_claim WHERE t.id = ANY(ARRAY(SELECT id FROM picked))
    RETURNING t.id
)
SELECT (SELECT count(*) FROM admitted), (SELECT count(*) FROM picked),
       (SELECT count(*) FROM taken)
"""  # noqa: S608


@dataclass(frozen=True)
class ClaimOutcome:
    admitted: bool  # the entry was this customer's, ADMITTED, its window open
    picked: int  # free ticket rows it could take (0 when not admitted)
    taken: int  # rows given to the claim: == quantity when the claim was made

    def made(self, quantity: int) -> bool:
        return self.taken == quantity


def claim_insert_admitted(
    claim: Claim, *, entry_id: uuid.UUID | str, reservation_id: str
) -> ClaimOutcome:
    """The claim in one statement (above), in autocommit or in the caller's
    transaction. ``claim`` is unsaved and fully filled in; it is saved when
    the outcome says ``made``. Raises IntegrityError on a second purchase."""
    values = _claim_values(claim)
    params: dict[str, Any] = {
        f"c_{f.attname}": v for f, v in zip(_CLAIM_FIELDS, values, strict=True)
    }
    params.update(
        entry=entry_id,
        event=claim.event_id,
        customer=claim.customer_id,
        tier=claim.tier_id,
        quantity=claim.quantity,
        admitted=QueueStatus.ADMITTED.value,
        completed=QueueStatus.COMPLETED.value,
        now=claim.created_at,
        reservation=reservation_id,
    )
    with prepared_cursor() as cursor:
        cursor.execute(_CLAIM_ADMITTED_SQL, params)
        admitted, picked, taken = cursor.fetchone()
    outcome = ClaimOutcome(admitted=admitted == 1, picked=picked, taken=taken)
    if outcome.made(claim.quantity):
        claim._state.adding = False
        claim._state.db = connection.alias
    return outcome
