"""The one helper for concurrency tests: real threads on real Postgres and
Redis, released together.

``race(fn, items)`` runs ``fn(item)`` for every item and returns each result
or the exception it raised, in item order. ``Race`` is the same when the
test must act while the threads run: a typical test takes the lock the code
under test needs, starts the race, waits until every thread is blocked on
that lock inside Postgres (``wait_until_blocked``), then releases it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection, transaction
from django.db.models import QuerySet


class Race:
    """Starts ``min(threads, len(items))`` threads that wait on one barrier,
    then take items from a shared queue. Each thread closes its own database
    connection when it is done."""

    def __init__(
        self, fn: Callable[[Any], Any], items: list[Any], *, threads: int | None = None
    ) -> None:
        self._results: list[Any] = [None] * len(items)
        work: queue.SimpleQueue[int] = queue.SimpleQueue()
        for index in range(len(items)):
            work.put(index)
        count = max(1, min(threads or len(items), len(items)))
        barrier = threading.Barrier(count)

        def worker() -> None:
            try:
                barrier.wait(timeout=30)
                while True:
                    try:
                        index = work.get_nowait()
                    except queue.Empty:
                        return
                    try:
                        self._results[index] = fn(items[index])
                    except Exception as exc:
                        self._results[index] = exc
            finally:
                connection.close()

        self._threads = [threading.Thread(target=worker) for _ in range(count)]
        for thread in self._threads:
            thread.start()

    def results(self, *, timeout: float = 60) -> list[Any]:
        """Wait for every thread; each item's result or exception, in order."""
        for thread in self._threads:
            thread.join(timeout=timeout)
            assert not thread.is_alive(), "a racing thread did not finish"
        return self._results


def race(fn: Callable[[Any], Any], items: list[Any], *, threads: int = 32) -> list[Any]:
    return Race(fn, items, threads=threads).results()


def race_calls(fn: Callable[..., Any], calls: list[dict[str, Any]]) -> Race:
    """A ``Race`` of ``fn(**kwargs)`` for each ``kwargs`` in ``calls``."""
    return Race(lambda kwargs: fn(**kwargs), calls)


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


# --- forcing one interleaving ------------------------------------------------------


class Aside:
    """``action()`` run in another thread (so on its own database connection),
    started at once. ``settle`` waits until it has finished or is blocked on a
    lock inside Postgres; ``finish`` joins it and returns its result (or
    raises what it raised)."""

    def __init__(self, action: Callable[[], Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()

        def run() -> None:
            try:
                self.result = action()
            except BaseException as exc:  # handed to the test by finish()
                self.error = exc
            finally:
                connection.close()
                self.done.set()

        self.thread = threading.Thread(target=run)
        self.thread.start()

    def settle(self, *, timeout: float = 15.0) -> str:
        """ "done" or "blocked" (waiting on a Postgres lock); "running" when
        neither happened within ``timeout`` (e.g. it waits on a Redis lock)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.done.wait(0.02):
                return "done"
            if waiting_on_locks() >= 1:
                return "blocked"
        return "done" if self.done.is_set() else "running"

    def finish(self, *, timeout: float = 30.0) -> Any:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the action run aside did not finish"
        if self.error is not None:
            raise self.error
        return self.result


class Between:
    """Forces one interleaving: ``target.name`` (a function the code under test
    looks up in that module) is wrapped so that, on its first call, it runs as
    usual and then, before returning, ``action`` runs in another thread until
    it finished or blocked on a Postgres lock (``settle_timeout`` when it waits
    on something else). The code under test then goes on. Later calls pass
    straight through. ``materialize`` reads a returned iterator to the end
    first (the code under test has then "read the rows")."""

    def __init__(
        self,
        monkeypatch: Any,
        target: Any,
        name: str,
        action: Callable[[], Any],
        *,
        materialize: bool = False,
        settle_timeout: float = 15.0,
    ) -> None:
        real = getattr(target, name)
        self.aside: Aside | None = None
        self.state = ""

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = real(*args, **kwargs)
            if self.aside is not None:
                return result
            if materialize:
                result = iter(list(result))
            self.aside = Aside(action)
            self.state = self.aside.settle(timeout=settle_timeout)
            return result

        monkeypatch.setattr(target, name, wrapper)

    def finish(self) -> Any:
        assert self.aside is not None, "the code under test never reached the seam"
        return self.aside.finish()


@contextmanager
def rows_locked(rows: QuerySet) -> Iterator[None]:
    """``rows`` locked FOR UPDATE by a transaction on another connection (a
    claim in flight) for the duration of the block, then rolled back."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        with transaction.atomic():
            list(rows.select_for_update())
            locked.set()
            release.wait(30)
            transaction.set_rollback(True)

    holder = Aside(hold)
    try:
        assert locked.wait(10), "the rows were not locked"
        yield
    finally:
        release.set()
        holder.finish()
