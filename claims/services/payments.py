"""What the payments app (above claims) needs to change on a claim while a
payment is in flight. Each runs inside the payments transaction that moves
the payment, so the claim and the payment change together."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.db import DEFAULT_DB_ALIAS, transaction
from django.db.models import F
from django.utils import timezone

from claims.domain import ClaimStatus
from claims.models import Claim
from customers.models import Customer
from fairqueue.errors import ErrorCode, NotFound
from fairqueue.locks import claim_row_lock_sql, locked_row

_CLAIM_FIELDS = [f.attname for f in Claim._meta.concrete_fields]


def _claim_lock_sql(where: str) -> str:
    """The claim row (every column) locked, its customer's id and email read
    with it: written once (every payment start and webhook takes it), not
    compiled per call."""
    columns = ", ".join(f'c."{f.column}"' for f in Claim._meta.concrete_fields)
    return claim_row_lock_sql(
        f"SELECT {columns}, u.id, u.email FROM {Claim._meta.db_table} c "  # noqa: S608
        f"JOIN {Customer._meta.db_table} u ON u.id = c.customer_id WHERE {where}",
        alias="c",
    )


_CLAIM_LOCK_SQL = _claim_lock_sql("c.id = %s")
_CUSTOMERS_CLAIM_LOCK_SQL = _claim_lock_sql("c.id = %s AND c.customer_id = %s")


def claim_lock(*, claim_id: uuid.UUID | str, customer_id: uuid.UUID | str | None = None) -> Claim:
    """The claim row, locked until the caller's transaction ends (a wait past
    the lock timeout is 503 busy), with its customer's email. With
    ``customer_id`` it must be theirs: someone else's claim is as unknown as
    a missing one."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("claim_lock needs the caller's transaction")
    if customer_id is None:
        row = locked_row(_CLAIM_LOCK_SQL, [claim_id])
    else:
        row = locked_row(_CUSTOMERS_CLAIM_LOCK_SQL, [claim_id, customer_id])
    if row is None:
        raise NotFound("No such claim.", code=ErrorCode.CLAIM_NOT_FOUND)
    claim = Claim.from_db(DEFAULT_DB_ALIAS, _CLAIM_FIELDS, row[: len(_CLAIM_FIELDS)])
    claim.customer = Customer.from_db(DEFAULT_DB_ALIAS, ["id", "email"], row[len(_CLAIM_FIELDS) :])
    return claim


_PAYMENT_STARTED_SQL = (
    f"UPDATE {Claim._meta.db_table} SET payment_in_flight = true "  # noqa: S608
    f"WHERE id = %s AND status = '{ClaimStatus.CLAIMED.value}'"
)


def claim_payment_started(*, claim: Claim) -> tuple[str, list[Any]]:
    """A payment for the (locked, CLAIMED) claim is in flight from now on:
    claim expiry leaves it to the payments app (invariant 5). Answers the
    UPDATE that says so, which the payments app sends with the payment it
    writes (one statement); the claim in memory is marked."""
    if claim.status != ClaimStatus.CLAIMED:
        raise ValueError(f"a {claim.status} claim cannot start a payment")
    claim.payment_in_flight = True
    return _PAYMENT_STARTED_SQL, [claim.pk]


def claim_payment_ended(*, claim_id: uuid.UUID | str) -> None:
    """The claim's payment is no longer in flight (it was confirmed or
    failed): expiry may look at the claim again."""
    Claim.objects.filter(pk=claim_id, payment_in_flight=True).update(payment_in_flight=False)


def claim_extend(*, claim_id: uuid.UUID | str, seconds: float) -> bool:
    """Give a CLAIMED claim ``seconds`` more to be paid (conditional): the
    time a payment could not start through no fault of the customer (the
    gateway refused our merchant account). False when it is not CLAIMED."""
    if seconds <= 0:
        return False
    return bool(
        Claim.objects.filter(pk=claim_id, status=ClaimStatus.CLAIMED).update(
            expires_at=F("expires_at") + timedelta(seconds=seconds)
        )
    )


def claim_dispute_flag(*, claim_id: uuid.UUID | str) -> None:
    """The claim's payment is disputed or reversed at the customer's bank:
    staff decide what becomes of the tickets (they stay valid until then)."""
    Claim.objects.filter(pk=claim_id, disputed_at__isnull=True).update(disputed_at=timezone.now())


def claim_dispute_clear(*, claim_id: uuid.UUID | str) -> None:
    """Staff (or the bank, ruling for us) settled the dispute: no flag."""
    Claim.objects.filter(pk=claim_id, disputed_at__isnull=False).update(disputed_at=None)
