"""Every lock FairQueue takes, in one module, with the order they are taken in.

Three kinds:

- **Postgres row locks**: the locks correctness rests on. Every blocking one
  is taken by a named helper below (``event_row_lock``, ``claim_row_lock``,
  ...), which waits no longer than the lock timeout (``pg_lock_timeout``):
  a longer wait is "busy, retry" (503 + Retry-After), never a hang. The app
  says which rows (a queryset, or for a hot path a SELECT written once:
  ``claim_row_lock_sql``, ``payment_row_lock_sql``, run by ``locked_row``);
  the helper says how they are locked. No
  other module calls ``select_for_update`` or writes a ``FOR UPDATE`` clause
  (tests/fairqueue/test_lock_rule.py reads the source), except the batch scans that
  never wait (``SKIP LOCKED``), which the test names one by one.
- **Redis locks** (redis-py's ``Lock``: an owner token, a TTL, released only
  by its owner): single-flight of periodic work, per task (``single_flight``)
  or per event (``redis_lock``). They only turn duplicate work away early;
  correctness never rests on them.
- **Postgres advisory locks**: the single flight of periodic tasks while
  Redis is unreachable, so beat tasks keep running through a Redis outage.
  Session locks: a worker that dies drops its connection and with it the lock.

The lock order (docs/CONCURRENCY.md says why). A transaction takes row locks
down a branch, never back up; a lock it already holds may be taken again.

    task lock (Redis + advisory)
      event admission lock (Redis)
        event row                          event_row_lock
          AdmissionState row               admission_state_lock
          tier row                         tier_row_lock (with_event: both, one statement)
            ticket rows                    provisioning (SKIP LOCKED)
    payment row                            payment_row_lock
      refund row                           refund_row_lock
      claim row                            claim_row_lock (also after a refund's row)
        ticket rows, ascending id          ticket_rows_lock (re-instate)
        seat rows, ascending id            seat_rows_lock (re-instate)
        first buyer's claim row            claim_row_lock (a resale paid)
          ticket row, issued tickets       conditional UPDATEs
    claim row                              claim_row_lock (starting a payment, releasing an order,
      new payment row (insert)               a return, a withdrawal; a transfer made,
                                             cancelled or accepted)
      ticket row, issued ticket            conditional UPDATEs (return, withdrawal, transfer)
      new claim row (insert)               the recipient's purchase (transfer)
    new claim row (insert)
      seat rows, ascending id              seat_rows_lock (a claim of chosen seats)
    sign-in code row                       sign_in_code_lock (nothing else in its transaction)

The event row is taken again (sold out, back on sale) only after the claim,
payment or ticket rows that led there have committed, in a transaction of its
own; ticket and seat rows always in ascending id, so two takers never wait on
each other crosswise.

This module is the store of the Redis locks and follows the Redis-failure
rule of ``fairqueue.redis``: no caller ever sees a ``RedisError``. An
unreachable Redis means "no Redis lock": ``redis_lock`` yields a ``Held`` that
guards nothing (callers keep their Postgres guard), ``task_lock`` falls back
to the advisory lock.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.db.models import QuerySet
from redis.exceptions import LockError
from redis.lock import Lock

from fairqueue.db import prepared_cursor
from fairqueue.errors import Busy
from fairqueue.redis import best_effort, get_redis

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")
Row = TypeVar("Row")

# Postgres' SQLSTATE for "lock_timeout expired" (lock_not_available).
_LOCK_NOT_AVAILABLE = "55P03"


# --- Postgres row locks ---------------------------------------------------------

# Set on the connection while a ``pg_lock_timeout`` block runs: a row lock
# taken inside it waits under that block's limit (no statement to set it again).
_IN_FORCE = "fq_lock_timeout_in_force"


@contextmanager
def _busy_on_timeout() -> Iterator[None]:
    try:
        yield
    except OperationalError as exc:
        if getattr(getattr(exc, "__cause__", None), "sqlstate", None) == _LOCK_NOT_AVAILABLE:
            raise Busy("Someone else is changing this right now; retry shortly.") from exc
        raise


@contextmanager
def _in_force() -> Iterator[None]:
    """The block runs with the limit set: its helpers set none of their own,
    and a wait past it is Busy."""
    depth = getattr(connection, _IN_FORCE, 0)
    setattr(connection, _IN_FORCE, depth + 1)
    try:
        with _busy_on_timeout():
            yield
    finally:
        setattr(connection, _IN_FORCE, depth)


@contextmanager
def pg_lock_timeout(ms: int | None = None) -> Iterator[None]:
    """Inside a transaction: every lock the block waits for is waited for at
    most ``ms`` (default ``DB_LOCK_TIMEOUT_MS``); a longer wait raises Busy.
    The limit is transaction-local (``set_config(..., true)``) and restored
    when the block ends normally."""
    if not connection.in_atomic_block:
        raise RuntimeError("pg_lock_timeout needs a transaction")
    limit = settings.DB_LOCK_TIMEOUT_MS if ms is None else ms
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('lock_timeout'), set_config('lock_timeout', %s, true)",
            [f"{int(limit)}ms"],
        )
        previous = cursor.fetchone()[0]
    with _in_force():
        yield
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('lock_timeout', %s, true)", [previous])


# Set on the connection from the start of an outermost ``locked_transaction``
# until the block's limit is set, which its first statement does: a SQL row
# lock (``locked_row``) in its own statement, anything else just before it.
_PENDING = "fq_lock_timeout_pending"
_SET_LIMIT_SQL = "SELECT set_config('lock_timeout', %s, true)"


def _limit() -> str:
    return f"{int(settings.DB_LOCK_TIMEOUT_MS)}ms"


def _limit_first(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]
) -> Any:
    """Execute wrapper of an outermost ``locked_transaction``: its first
    statement is preceded by the lock timeout, unless it carries it."""
    db = context["connection"]
    if getattr(db, _PENDING, False):
        setattr(db, _PENDING, False)
        context["cursor"].execute(_SET_LIMIT_SQL, [_limit()])
    return execute(sql, params, many, context)


@contextmanager
def locked_transaction() -> Iterator[None]:
    """``transaction.atomic()`` whose row locks all wait under one lock
    timeout (``DB_LOCK_TIMEOUT_MS``), set once for the block: a short
    transaction that takes several rows (a webhook: the payment, then its
    claim) spends at most one statement on it instead of two per lock, and
    none when its first statement is a SQL row lock (``locked_row`` sets the
    limit in that statement). As the outermost block the limit ends with the
    transaction (nothing to restore); nested, it is ``pg_lock_timeout``
    inside a savepoint."""
    if connection.in_atomic_block:
        with transaction.atomic(), pg_lock_timeout():
            yield
        return
    with transaction.atomic(), connection.execute_wrapper(_limit_first):
        setattr(connection, _PENDING, True)
        try:
            with _in_force():
                yield
        finally:
            setattr(connection, _PENDING, False)


def _bounded(take: Callable[[], T]) -> T:
    """Run a locking statement under the lock timeout: the block's already
    in force, or one of its own."""
    if getattr(connection, _IN_FORCE, 0):
        with _busy_on_timeout():
            return take()
    with pg_lock_timeout():
        return take()


def _of(rows: QuerySet[Any, Any], label: str, helper: str) -> None:
    """A helper locks the rows its name says (the app label of the model)."""
    found = rows.model._meta.concrete_model._meta.label
    if found != label:
        raise TypeError(f"{helper} locks {label} rows, not {found}")


def _one(rows: QuerySet[Any, Row], label: str, helper: str, **how: Any) -> Row | None:
    _of(rows, label, helper)
    return _bounded(lambda: rows.select_for_update(**how).first())


def event_row_lock(events: QuerySet[Any, Row], *, no_key: bool = False) -> Row | None:
    """The event's row (``FOR UPDATE``; ``no_key``: ``FOR NO KEY UPDATE``,
    which lets the joins' inserts, whose foreign key takes ``FOR KEY SHARE``,
    go on). None when there is no such event."""
    return _one(events, "events.Event", "event_row_lock", no_key=no_key, of=("self",))


def admission_state_lock(states: QuerySet[Any, Row]) -> Row | None:
    """An event's AdmissionState row (the tick's clock step, under the event row)."""
    return _one(states, "queueing.AdmissionState", "admission_state_lock", of=("self",))


def tier_row_lock(tiers: QuerySet[Any, Row], *, with_event: bool = False) -> Row | None:
    """A tier's row; ``with_event``: its event's row too, in the same
    statement (``tiers`` must ``select_related("event")``)."""
    of = ("self", "event") if with_event else ("self",)
    return _one(tiers, "events.TicketTier", "tier_row_lock", of=of)


def payment_row_lock(payments: QuerySet[Any, Row]) -> Row | None:
    """A payment's row: every change of a payment and of what hangs on it
    (its claim, its refunds) starts here."""
    return _one(payments, "payments.Payment", "payment_row_lock", of=("self",))


def refund_row_lock(refunds: QuerySet[Any, Row]) -> Row | None:
    """A refund's row, under its payment's row."""
    return _one(refunds, "payments.Refund", "refund_row_lock", of=("self",))


def claim_row_lock(claims: QuerySet[Any, Row]) -> Row | None:
    """A claim's row (not the rows it joins for reading, e.g. its customer)."""
    return _one(claims, "claims.Claim", "claim_row_lock", of=("self",))


# Row locks written once in SQL, for the hot paths (a payment's start, its
# webhook): the ORM would compile the locking query anew on every call. The
# app writes the SELECT (its columns, joins and filters, never a lock
# clause); the named builder adds the lock clause, ``locked_row`` runs it.


def _sql_lock(select: str, alias: str) -> str:
    return f"{select} FOR UPDATE OF {alias}"


def payment_row_lock_sql(select: str, *, alias: str) -> str:
    """``select`` locking the payment row of table alias ``alias`` (the
    same lock as ``payment_row_lock``)."""
    return _sql_lock(select, alias)


def claim_row_lock_sql(select: str, *, alias: str) -> str:
    """``select`` locking the claim row of table alias ``alias`` (the same
    lock as ``claim_row_lock``; rows it joins for reading are not locked)."""
    return _sql_lock(select, alias)


def _fetch_one(sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        row: tuple[Any, ...] | None = cursor.fetchone()
        return row


@functools.lru_cache(maxsize=32)
def _carrying_limit(sql: str) -> str:
    """The lock's SELECT setting the lock timeout first: Postgres computes a
    row's columns before ``FOR UPDATE`` locks it, so the wait for that lock
    is already bounded."""
    if not sql.startswith("SELECT "):
        raise ValueError("a SQL row lock is a SELECT")
    return f"SELECT set_config('lock_timeout', %s, true), {sql.removeprefix('SELECT ')}"


def locked_row(sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    """The first row of a lock built above, under the lock timeout (a wait
    past it is Busy); a prepared statement (fairqueue/db.py). The first
    statement of a ``locked_transaction`` sets the block's limit itself."""
    if not getattr(connection, _PENDING, False):
        return _bounded(lambda: _fetch_one(sql, params))
    setattr(connection, _PENDING, False)
    with _busy_on_timeout():
        row = _fetch_one(_carrying_limit(sql), [_limit(), *params])
    if row is None:  # no row, no column computed: the limit is not set yet
        setattr(connection, _PENDING, True)
        return None
    return row[1:]


def _in_id_order(
    rows: QuerySet[Any, Row], *, limit: int | None = None, skip_locked: bool = False
) -> list[Row]:
    ordered = rows.order_by("pk")
    if limit is not None:
        ordered = ordered[:limit]
    locked = ordered.select_for_update(skip_locked=skip_locked, of=("self",))
    if skip_locked:  # never waits: no lock timeout to set
        return list(locked)
    return _bounded(lambda: list(locked))


def ticket_rows_lock(tickets: QuerySet[Any, Row], *, limit: int) -> list[Row]:
    """Up to ``limit`` ticket rows, locked in ascending id, waiting for rows
    that claims in flight hold (a row taken meanwhile drops out: READ
    COMMITTED re-checks it). The caller holds no ticket row of the tier yet."""
    _of(tickets, "inventory.Ticket", "ticket_rows_lock")
    return _in_id_order(tickets, limit=limit)


def seat_rows_lock(seats: QuerySet[Any, Row], *, skip_locked: bool = False) -> list[Row]:
    """Seat rows (a reserved tier's ticket rows), locked in ascending id;
    waits for seats that claims in flight hold unless ``skip_locked`` (then
    they are left out)."""
    _of(seats, "inventory.Ticket", "seat_rows_lock")
    return _in_id_order(seats, skip_locked=skip_locked)


def sign_in_code_lock(codes: QuerySet[Any, Row]) -> Row | None:
    """A sign-in code's row, while an attempt is counted or the code consumed."""
    return _one(codes, "core.OneTimeCode", "sign_in_code_lock", of=("self",))


# --- Redis locks ----------------------------------------------------------------

# What _try_acquire answers when Redis could not be asked.
UNREACHABLE = None


def _lock(key: str, ttl_s: float) -> Lock:
    # thread_local=False: the token lives on the Lock object, so a pass that
    # hands its work to threads can still renew and release it.
    return get_redis().lock(key, timeout=ttl_s, sleep=0.05, thread_local=False)


@best_effort(UNREACHABLE)
def _try_acquire(key: str, ttl_s: float, wait_s: float) -> tuple[Lock, bool]:
    """(the lock, True: ours / False: someone else holds it); None: Redis
    unreachable (a cluster's client too is made here, inside the rule)."""
    lock = _lock(key, ttl_s)
    return lock, bool(lock.acquire(blocking=wait_s > 0, blocking_timeout=wait_s or None))


@best_effort(True)
def _renew(lock: Lock) -> bool:
    try:
        lock.reacquire()
    except LockError:  # it expired and was taken (or dropped): no longer ours
        return False
    return True


@best_effort(None)
def _release(lock: Lock) -> None:
    try:
        lock.release()
    except LockError:
        logger.info("lock %s had expired before its release", lock.name)


@best_effort(None)
def _release_token(key: str, token: str) -> None:
    # LockError: expired, or taken by someone else since: not ours to release.
    with contextlib.suppress(LockError):
        _lock(key, 1).do_release(token)


class Held:
    """A lock we own. ``renew`` gives a Redis lock a full TTL again (long
    passes call it between chunks); it answers False when the lock was lost
    (it expired and someone else took it), and the pass should stop. A lock
    held through a fallback (``lock`` None) has nothing to renew: Redis was
    unreachable, so nobody else can take it there either."""

    def __init__(self, lock: Lock | None) -> None:
        self._lock = lock

    @property
    def in_redis(self) -> bool:
        return self._lock is not None

    def renew(self) -> bool:
        return True if self._lock is None else _renew(self._lock)


@contextmanager
def redis_lock(key: str, *, ttl_s: float, wait_s: float = 0.0) -> Iterator[Held | None]:
    """Yields a ``Held`` when we got the lock (waiting up to ``wait_s``), None
    when someone else holds it. With Redis unreachable it yields a ``Held``
    that guards nothing: callers that need mutual exclusion then rely on
    their Postgres lock, which they must take anyway."""
    attempt = _try_acquire(key, ttl_s, wait_s)
    if attempt is UNREACHABLE:
        yield Held(None)
        return
    lock, got = attempt
    if not got:
        yield None
        return
    try:
        yield Held(lock)
    finally:
        _release(lock)


def release(lock: Lock) -> None:
    """Release a lock we may no longer own (it expired): never raises."""
    _release(lock)


def release_token(key: str, token: str) -> None:
    """Release a lock taken elsewhere (e.g. inside a Lua script) with ``token``,
    by redis-py's own owner-checked release. Never raises."""
    _release_token(key, token)


# --- single flight of periodic tasks ---------------------------------------------


def _advisory_key(name: str) -> int:
    """A stable signed 64-bit key per name (the same in every process)."""
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@contextmanager
def _advisory(name: str) -> Iterator[bool]:
    """The session-level advisory lock of task ``name``, if free (no wait)."""
    key = _advisory_key(f"fq:task:{name}")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        mine = bool(cursor.fetchone()[0])
    try:
        yield mine
    finally:
        if mine:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [key])


@contextmanager
def task_lock(name: str, *, ttl_s: float) -> Iterator[Held | None]:
    """One run of ``name`` at a time across every worker. Yields None when
    another run holds it.

    The Redis lock first; while Redis is unreachable, the task's Postgres
    advisory lock instead. A run holding the Redis lock also takes the
    advisory lock (one cheap statement), so a run that started during an
    outage and one that starts after Redis came back do not overlap either."""
    attempt = _try_acquire(f"fq:task-lock:{name}", ttl_s, 0)
    lock, got = attempt if attempt is not UNREACHABLE else (None, False)
    if lock is not None and not got:
        yield None
        return
    try:
        with _advisory(name) as mine:
            if not mine:
                yield None
            else:
                yield Held(lock if got else None)
    finally:
        if lock is not None and got:
            _release(lock)


SKIPPED = {"skipped": "another run holds the lock"}


def single_flight(name: str, *, ttl_s: float) -> Callable[[Callable[P, T]], Callable[P, T | dict]]:
    """Decorator for a periodic task: the body runs only in the worker that
    takes ``task_lock(name)``; the others answer ``SKIPPED`` at once. Give the
    Celery task a time limit below ``ttl_s`` (``time_limits``) so a run never
    outlives its lock."""

    def decorate(fn: Callable[P, T]) -> Callable[P, T | dict]:
        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> T | dict:
            with task_lock(name, ttl_s=ttl_s) as held:
                if held is None:
                    return SKIPPED
                return fn(*args, **kwargs)

        run.lock_ttl_s = ttl_s  # type: ignore[attr-defined]  # read by the time-limit test
        return run

    return decorate


def time_limits(ttl_s: float) -> dict[str, float]:
    """Celery options for a task that runs under a lock of ``ttl_s`` seconds:
    it is stopped (soft limit first, so it can clean up) before its lock
    could expire and let a second run in."""
    return {"soft_time_limit": ttl_s * 0.8, "time_limit": ttl_s * 0.9}
