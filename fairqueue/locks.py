"""Every lock FairQueue takes, in one module. The lock order (which lock may be
held while taking which) is written in docs/CONCURRENCY.md.

Three kinds:

- **Redis locks** (redis-py's ``Lock``: an owner token, a TTL, released only
  by its owner): single-flight of periodic work, per task (``single_flight``)
  or per event (``redis_lock``). They only turn duplicate work away early;
  correctness never rests on them.
- **Postgres advisory locks**: the single-flight fallback while Redis is
  unreachable, so beat tasks keep running through a Redis outage. Session
  locks: a worker that dies drops its connection and with it the lock.
- **Postgres row locks** (``SELECT ... FOR UPDATE``, conditional UPDATEs): the
  locks correctness rests on. Taken inside ``pg_lock_timeout``, a wait is
  bounded and a timeout is "busy, retry" (503 + Retry-After), never a hang.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

import redis
from django.conf import settings
from django.db import OperationalError, connection
from redis.lock import Lock

from fairqueue.errors import Busy
from fairqueue.redis import get_redis, redis_failed

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

# Postgres' SQLSTATE for "lock_timeout expired" (lock_not_available).
_LOCK_NOT_AVAILABLE = "55P03"


# --- Postgres row locks ---------------------------------------------------------


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
    try:
        yield
    except OperationalError as exc:
        if getattr(getattr(exc, "__cause__", None), "sqlstate", None) == _LOCK_NOT_AVAILABLE:
            raise Busy("Someone else is changing this right now; retry shortly.") from exc
        raise
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('lock_timeout', %s, true)", [previous])


# --- Redis locks ----------------------------------------------------------------


def _lock(key: str, ttl_s: float) -> Lock:
    # thread_local=False: the token lives on the Lock object, so a pass that
    # hands its work to threads can still renew and release it.
    return get_redis().lock(key, timeout=ttl_s, sleep=0.05, thread_local=False)


class Held:
    """A Redis lock we own. ``renew`` gives it a full TTL again (long passes
    call it between chunks); it answers False when the lock was lost (it
    expired and someone else took it), and the pass should stop."""

    def __init__(self, lock: Lock | None) -> None:
        self._lock = lock

    def renew(self) -> bool:
        if self._lock is None:  # held through the Postgres fallback
            return True
        try:
            self._lock.reacquire()
        except redis.exceptions.LockError:
            return False
        except redis.RedisError:
            redis_failed("lock renew")
            return True  # Redis went away: nobody else can take it there either
        return True


@contextmanager
def redis_lock(key: str, *, ttl_s: float, wait_s: float = 0.0) -> Iterator[Held | None]:
    """Yields a ``Held`` when we got the lock (waiting up to ``wait_s``), None
    when someone else holds it. With Redis unreachable it yields a ``Held``
    that guards nothing: callers that need mutual exclusion then rely on
    their Postgres lock, which they must take anyway."""
    lock = _lock(key, ttl_s)
    try:
        got = lock.acquire(blocking=wait_s > 0, blocking_timeout=wait_s or None)
    except redis.RedisError:
        redis_failed(f"lock {key}")
        yield Held(None)
        return
    if not got:
        yield None
        return
    try:
        yield Held(lock)
    finally:
        release(lock)


def release(lock: Lock) -> None:
    """Release a lock we may no longer own (it expired): never raises."""
    try:
        lock.release()
    except redis.exceptions.LockError:
        logger.info("lock %s had expired before its release", lock.name)
    except redis.RedisError:
        redis_failed(f"lock {lock.name} release")


def release_token(key: str, token: str) -> None:
    """Release a lock taken elsewhere (e.g. inside a Lua script) with ``token``,
    by redis-py's own owner-checked release."""
    lock = _lock(key, 1)
    try:
        lock.do_release(token)
    except redis.exceptions.LockError:
        pass  # expired, or taken by someone else since: not ours to release
    except redis.RedisError:
        redis_failed(f"lock {key} release")


# --- single flight of periodic tasks ---------------------------------------------


def _advisory_key(name: str) -> int:
    """A stable signed 64-bit key per name (the same in every process)."""
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@contextmanager
def _advisory(name: str) -> Iterator[bool]:
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
    """One run of ``name`` at a time across every worker: a Redis lock, or a
    Postgres advisory lock while Redis is unreachable. Yields None when
    another run holds it."""
    lock = _lock(f"fq:task-lock:{name}", ttl_s)
    try:
        got = lock.acquire(blocking=False)
    except redis.RedisError:
        redis_failed(f"task lock {name}; using the Postgres advisory lock")
        with _advisory(name) as mine:
            yield Held(None) if mine else None
        return
    if not got:
        yield None
        return
    try:
        yield Held(lock)
    finally:
        release(lock)


SKIPPED = {"skipped": "another run holds the lock"}


def single_flight(name: str, *, ttl_s: float) -> Callable[[Callable[P, T]], Callable[P, T | dict]]:
    """Decorator for a periodic task: the body runs only in the worker that
    takes ``task_lock(name)``; the others answer ``SKIPPED`` at once. Give the
    Celery task a time limit below ``ttl_s`` so a run never outlives its lock."""

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
