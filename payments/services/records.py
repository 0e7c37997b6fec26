"""The two primitive writes every payment service is made of: an entry in the
append-only event log, and a conditional state change (logged with it)."""

from __future__ import annotations

import functools
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import F, Field, ForeignKey
from django.utils import timezone

from claims.services import claim_payment_ended
from fairqueue.db import prepared_cursor
from fairqueue.news import send_on_commit
from ledger.services import charge_params, charge_sql
from payments.domain import (
    LIVE_STATUSES,
    PAYMENT_MACHINE,
    TAKEN_ON_ARRIVAL,
    UNPAID_STATUSES,
    EventKind,
    PaymentStatus,
)
from payments.models import Payment, PaymentEvent
from payments.signals import refund_required

# The log's INSERT and the state change's UPDATE are written once, from the
# models (names from the models, values always parameters): every payment
# step runs them, and the ORM would compile them anew each time. They are
# prepared (fairqueue/db.py): Postgres plans each once per connection.
PAYMENT_EVENT_FIELDS = [f for f in PaymentEvent._meta.concrete_fields if not f.primary_key]
_INSERT_EVENT_SQL = (
    f"INSERT INTO {PaymentEvent._meta.db_table} "  # noqa: S608
    f"({', '.join(f'{chr(34)}{f.column}{chr(34)}' for f in PAYMENT_EVENT_FIELDS)}) "
    f"VALUES ({', '.join(['%s'] * len(PAYMENT_EVENT_FIELDS))}) RETURNING id"
)


# Value types Django sends for a field of each kind as they are (its
# preparation hands them back unchanged, and psycopg adapts them): a value of
# one skips the preparation, which every column of every payment statement
# would otherwise go through. Numbers (Django wraps them in psycopg's typed
# ints), JSON and anything else are prepared as always.
_SENT_AS_THEY_ARE: dict[str, frozenset[type]] = {
    "UUIDField": frozenset({uuid.UUID}),
    "CharField": frozenset({str}),
    "TextField": frozenset({str}),
    "DateTimeField": frozenset({datetime}),  # an aware one (below)
}


@functools.cache
def _sent_as_they_are(field: Field[Any, Any]) -> frozenset[type]:
    kind = (field.target_field if isinstance(field, ForeignKey) else field).get_internal_type()
    plain = _SENT_AS_THEY_ARE.get(kind)
    return frozenset() if plain is None else plain | {type(None)}


def db_value(field: Field[Any, Any], value: Any) -> Any:
    """``field.get_db_prep_save(value)``, without the call for a plain value
    the field sends as it is (a naive datetime is still made aware)."""
    kind = type(value)
    if kind in _sent_as_they_are(field) and (kind is not datetime or value.tzinfo is not None):
        return value
    return field.get_db_prep_save(value, connection)


def payment_event_values(event: PaymentEvent) -> list[Any]:
    """An unsaved log entry's column values, in ``PAYMENT_EVENT_FIELDS`` order."""
    return [db_value(f, getattr(event, f.attname)) for f in PAYMENT_EVENT_FIELDS]


def payment_log(*, payment: Payment, kind: EventKind, actor: str, **details: Any) -> PaymentEvent:
    """Write an entry of the payment's log (``payment_entry``: what it holds)."""
    return _insert_entry(payment_entry(payment=payment, kind=kind, actor=actor, **details))


def payment_entry(
    *,
    payment: Payment,
    kind: EventKind,
    actor: str,
    data: dict[str, Any] | None = None,
    raw_body: str = "",
    from_status: str = "",
    to_status: str = "",
) -> PaymentEvent:
    """An unsaved entry of the payment's log (``payment_log`` writes one)."""
    return PaymentEvent(
        payment_id=payment.pk,
        kind=kind,
        actor=actor,
        data=data or {},
        raw_body=raw_body,
        from_status=from_status,
        to_status=to_status,
        created_at=timezone.now(),
    )


def _insert_entry(event: PaymentEvent) -> PaymentEvent:
    with prepared_cursor() as cursor:
        cursor.execute(_INSERT_EVENT_SQL, payment_event_values(event))
        event.pk = cursor.fetchone()[0]
    event._state.adding = False
    event._state.db = connection.alias
    return event


_PAYMENT_FIELDS = list(Payment._meta.concrete_fields)
_PAYMENT_BY_NAME = {f.name: f for f in _PAYMENT_FIELDS} | {f.attname: f for f in _PAYMENT_FIELDS}
# A new payment and the first entry of its log, in one statement; nothing
# when its claim has a live payment already (the index of one live payment
# per claim refuses it; so would the reference's, taken: 96 random bits).
_INSERT_PAYMENT_SQL = (
    f"WITH created AS (INSERT INTO {Payment._meta.db_table} "  # noqa: S608
    f"({', '.join(f'{chr(34)}{f.column}{chr(34)}' for f in _PAYMENT_FIELDS)}) "
    f"VALUES ({', '.join(['%s'] * len(_PAYMENT_FIELDS))}) "
    "ON CONFLICT DO NOTHING RETURNING id) "
    f"{_INSERT_EVENT_SQL.split(' VALUES ')[0]} "
    f"SELECT {', '.join(['%s'] * len(PAYMENT_EVENT_FIELDS))} FROM created RETURNING id"
)


@functools.lru_cache(maxsize=8)
def _with_statement(statement: str) -> str:
    """The INSERT above with another data-modifying ``statement`` before it,
    in the same statement."""
    return f"WITH also AS ({statement}), {_INSERT_PAYMENT_SQL.removeprefix('WITH ')}"


def payment_create(
    *,
    payment: Payment,
    actor: str,
    kind: EventKind,
    data: dict[str, Any],
    also: tuple[str, list[Any]] | None = None,
) -> bool:
    """INSERT the (unsaved) payment and its first log entry (one statement);
    False, and nothing inserted, when its claim has a live payment already.
    ``also``: another write (SQL and parameters) sent in the same statement
    (the claim's payment flag, ``claim_payment_started``)."""
    now = timezone.now()
    payment.created_at = payment.updated_at = now
    entry = PaymentEvent(payment_id=payment.pk, kind=kind, actor=actor, data=data, created_at=now)
    values = [db_value(f, getattr(payment, f.attname)) for f in _PAYMENT_FIELDS]
    sql, params = _INSERT_PAYMENT_SQL, [*values, *payment_event_values(entry)]
    if also is not None:
        sql, params = _with_statement(also[0]), [*also[1], *params]
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        if cursor.fetchone() is None:
            return False
    payment._state.adding = False
    payment._state.db = connection.alias
    return True


@functools.lru_cache(maxsize=64)
def _transition_sql(
    target: PaymentStatus,
    names: tuple[str, ...],
    *,
    logged_first: bool,
    also: str | None = None,
    charge: str | None = None,
) -> str:
    """The conditional UPDATE and its log entry, in one statement: the entry
    is written only when the UPDATE moved the row. ``logged_first``: another
    log entry is written first, in the same statement, whether or not the
    row moves. ``also``: another data-modifying statement (RETURNING a row
    per row it writes) sent first in the same statement; the statement then
    answers one row: how many rows moved, and how many ``also`` wrote.
    ``charge``: the purchase account's charge entry (``ledger.services.charge_sql``),
    written only when the UPDATE moved the row."""
    columns = [_PAYMENT_BY_NAME[name].column for name in names]
    assignments = ", ".join(f'"{column}" = %s' for column in ["status", "updated_at", *columns])
    sources = ", ".join(f"'{status}'" for status in PAYMENT_MACHINE.sources_of(target))
    insert_event = _INSERT_EVENT_SQL.split(" VALUES ")[0]
    first, after = "", ""
    if also is not None:
        first = f"also AS ({also}), "
    if logged_first:
        first += f"logged AS ({_INSERT_EVENT_SQL}), "
        after = " AND EXISTS (SELECT 1 FROM logged)"  # the entry above is written first
    logged = (
        f"{insert_event} "  # noqa: S608
        f"SELECT {', '.join(['%s'] * len(PAYMENT_EVENT_FIELDS))} FROM moved RETURNING id"
    )
    after_moved = [] if charge is None else [f"charged AS ({charge})"]
    last = logged
    if also is not None:
        after_moved.append(f"entry AS ({logged})")
        last = "SELECT (SELECT count(*) FROM entry), (SELECT count(*) FROM also)"
    return (
        f"WITH {first}moved AS (UPDATE {Payment._meta.db_table} SET {assignments} "  # noqa: S608
        f"WHERE id = %s AND status IN ({sources}){after} RETURNING id)"
        f"{''.join(f', {cte}' for cte in after_moved)} {last}"
    )


def payment_transition(
    *,
    payment: Payment,
    target: PaymentStatus,
    actor: str,
    reason: str = "",
    data: dict[str, Any] | None = None,
    claim_settled: bool = False,
    logged_first: PaymentEvent | None = None,
    **fields: Any,
) -> bool:
    """``UPDATE ... WHERE status IN (states that may move to target)``; zero
    rows means someone else moved it first (an answer, not a crash). On
    success the change is logged (in the same statement) and ``payment``
    updated in memory. Callers hold the row lock, so the logged
    ``from_status`` is exact. ``claim_settled``: the caller confirmed the
    claim in this transaction, which ends its payment in flight
    (``claim_confirm``). ``logged_first``: an unsaved log entry written
    just before (in the same statement), whether or not the payment moves."""
    moved, _ = _transition(
        payment=payment,
        target=target,
        actor=actor,
        reason=reason,
        data=data,
        claim_settled=claim_settled,
        logged_first=logged_first,
        also=None,
        fields=fields,
    )
    return moved


def payment_transition_with(
    also: tuple[str, list[Any]],
    *,
    payment: Payment,
    target: PaymentStatus,
    actor: str,
    reason: str = "",
    logged_first: PaymentEvent | None = None,
    **fields: Any,
) -> tuple[bool, int]:
    """``payment_transition`` with another write sent first in its statement
    (``also``: SQL and parameters of a data-modifying statement RETURNING a
    row per row it writes), whether or not the payment moves: whether it
    moved, and how many rows ``also`` wrote. Plain values only (no
    expression)."""
    if any(hasattr(value, "resolve_expression") for value in fields.values()):
        raise ValueError("payment_transition_with writes plain values only")
    return _transition(
        payment=payment,
        target=target,
        actor=actor,
        reason=reason,
        data=None,
        claim_settled=False,
        logged_first=logged_first,
        also=also,
        fields=fields,
    )


def _transition(
    *,
    payment: Payment,
    target: PaymentStatus,
    actor: str,
    reason: str,
    data: dict[str, Any] | None,
    claim_settled: bool,
    logged_first: PaymentEvent | None,
    also: tuple[str, list[Any]] | None,
    fields: dict[str, Any],
) -> tuple[bool, int]:
    now = timezone.now()
    also_wrote = 0
    if target == PaymentStatus.CONFIRMED:
        fields.setdefault("confirmed_at", now)
    if target == PaymentStatus.FAILED:
        fields.setdefault("failed_at", now)
    source = payment.status
    entry = PaymentEvent(
        payment_id=payment.pk,
        kind=EventKind.STATE_CHANGE,
        actor=actor,
        from_status=source,
        to_status=target,
        data={"reason": reason, **(data or {})} if reason or data else {},
        created_at=now,
    )
    charge = _charge_of(payment, target, fields, actor)
    if any(hasattr(value, "resolve_expression") for value in fields.values()):
        # An expression (F(...)): the ORM writes it (staff's rare steps).
        if logged_first is not None:
            _insert_entry(logged_first)
        updated = Payment.objects.filter(
            pk=payment.pk, status__in=PAYMENT_MACHINE.sources_of(target)
        ).update(status=target, updated_at=now, **fields)
        if updated and charge is not None:
            with prepared_cursor() as cursor:
                cursor.execute(f"WITH moved AS (SELECT 1) {charge[0]}", charge[1])
        if updated:
            payment_log(
                payment=payment,
                kind=EventKind.STATE_CHANGE,
                actor=actor,
                from_status=source,
                to_status=target,
                data=entry.data,
            )
    else:
        names = tuple(sorted(fields))
        values = [db_value(_PAYMENT_BY_NAME[name], fields[name]) for name in names]
        params = [str(target), now, *values, payment.pk]
        if charge is not None:
            params += charge[1]
        params += payment_event_values(entry)
        if logged_first is not None:
            params = [*payment_event_values(logged_first), *params]
        sql = _transition_sql(
            target,
            names,
            logged_first=logged_first is not None,
            also=None if also is None else also[0],
            charge=None if charge is None else charge[0],
        )
        with prepared_cursor() as cursor:
            if also is None:
                cursor.execute(sql, params)
                updated = cursor.rowcount
            else:
                cursor.execute(sql, [*also[1], *params])
                updated, also_wrote = cursor.fetchone()
    if not updated:
        return False, also_wrote
    if source in LIVE_STATUSES and target not in LIVE_STATUSES and not claim_settled:
        claim_payment_ended(claim_id=payment.claim_id)
    payment.status = target
    payment.updated_at = now
    for name, value in fields.items():
        setattr(payment, name, value)
    if target == PaymentStatus.REFUND_REQUIRED:
        # The automatic refund (payments/receivers.py) follows the commit.
        send_on_commit(refund_required, sender=Payment, payment_id=payment.pk)
    return True, also_wrote


def _charge_of(
    payment: Payment, target: PaymentStatus, fields: dict[str, Any], actor: str
) -> tuple[str, list[Any]] | None:
    """The purchase account's charge when this move says the gateway took the
    money (an unpaid payment confirmed, or on the refund path): what the
    gateway reported, or what we asked for when it reported nothing usable;
    the claim's tickets with it when the payment confirms it."""
    if payment.status not in UNPAID_STATUSES or target not in TAKEN_ON_ARRIVAL:
        return None
    paid = fields.get("paid_amount", payment.paid_amount)
    amount = paid if isinstance(paid, int) and not isinstance(paid, bool) and paid >= 0 else None
    currency = fields.get("paid_currency") or payment.paid_currency or payment.currency
    with_tickets = target == PaymentStatus.CONFIRMED
    return charge_sql(with_tickets=with_tickets), charge_params(
        claim_id=payment.claim_id,
        payment_id=payment.pk,
        amount=payment.amount if amount is None else amount,
        currency=currency,
        actor=actor,
        with_tickets=with_tickets,
    )


def first_check_seconds() -> float:
    """When reconciliation first asks the gateway about a PENDING payment:
    one reconciliation interval after it started (a card declined at once is
    found then, without any webhook: Paystack sends none for a decline),
    then on the backoff from PAYMENT_STALE_SECONDS."""
    return float(min(settings.PAYMENT_STALE_SECONDS, settings.RECONCILE_INTERVAL_SECONDS))


def lease_seconds() -> int:
    """How long a worker may hold a payment while it talks to the gateway:
    longer than the client's whole bounded call."""
    return int(2 * settings.PAYSTACK_TIMEOUT_SECONDS) + 30


def payment_lease_take(*, payment_id: uuid.UUID, now: datetime | None = None) -> bool:
    """Take the right to call the gateway for a live payment whose lease has
    lapsed: one conditional UPDATE, so exactly one caller wins."""
    now = now or timezone.now()
    return bool(
        Payment.objects.filter(
            pk=payment_id,
            status__in=[PaymentStatus.INITIALIZING, PaymentStatus.PENDING],
            next_check_at__lte=now,
        ).update(
            next_check_at=now + timedelta(seconds=lease_seconds()),
            checks=F("checks") + 1,
            updated_at=now,
        )
    )


def payment_next_check(*, payment_id: uuid.UUID, after_seconds: float) -> None:
    Payment.objects.filter(pk=payment_id).update(
        next_check_at=timezone.now() + timedelta(seconds=after_seconds)
    )
