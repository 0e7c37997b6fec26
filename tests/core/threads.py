"""Helpers for concurrency tests with real threads on real Postgres.

To make calls really overlap, a test takes the lock the code under test
needs, starts the threads, waits until every one is blocked on that lock
inside Postgres, then releases it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import connection


def run_threads(
    fn: Callable[..., Any], calls: list[dict]
) -> tuple[list[threading.Thread], list[Any]]:
    """Start fn(**kwargs) for each call in its own thread. The results list
    (value or the exception raised, in call order) is filled once joined."""
    results: list[Any] = [None] * len(calls)

    def target(i: int, kwargs: dict) -> None:
        try:
            results[i] = fn(**kwargs)
        except Exception as exc:
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=target, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    return threads, results


def join(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.join(timeout=30)
        assert not t.is_alive()


def waiting_on_locks() -> int:
    """Sessions of this test database blocked on a lock (row or advisory)."""
    with connection.cursor() as cursor:
        # Activity statistics are a per-transaction snapshot: refresh it.
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


def wait_until_blocked(n: int) -> None:
    deadline = time.monotonic() + 15
    while waiting_on_locks() < n:
        assert time.monotonic() < deadline, f"only {waiting_on_locks()} of {n} blocked"
        time.sleep(0.02)
