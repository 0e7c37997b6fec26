"""The Redis rebuild of a whole waiting line from Postgres: prints figures,
asserts nothing (not a test).

    DATABASE_URL=... REDIS_URL=... python bench/rebuild_bench.py [--waiting 1000000] [--runs 3]

Use a throwaway database: the run adds --waiting customers and queue entries
(removed at the end unless --keep). It seeds the line in Postgres once, then
--runs times drops the event's waiting set and times ``queue_rebuild`` (the
rebuild a wiped Redis gets from the admission tick, ``rebuild_redis`` and a
worker's start), printing each run and the spread.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import os
import statistics
import sys
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING
from unittest import mock

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.queue_setup import cleanup, django_setup, make_event, seed_waiting

if TYPE_CHECKING:
    from queueing.store import QueueStore


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--waiting", type=int, default=1_000_000, help="entries in the line")
    parser.add_argument("--runs", type=int, default=3, help="rebuilds to time")
    parser.add_argument("--keep", action="store_true", help="leave the benchmark data in place")
    parser.add_argument("--event", help="an event seeded by an earlier --keep run: no seeding")
    parser.add_argument(
        "--compare",
        action="store_true",
        help="alternate each rebuild with one whose writes are plain redis-py pipelines",
    )
    args = parser.parse_args()
    for var in ("DATABASE_URL", "REDIS_URL"):
        if var not in os.environ:
            raise SystemExit(f"{var} must be set (use a throwaway database)")
    django_setup()
    from queueing.services import queue_rebuild
    from queueing.store import queue_store

    store = queue_store()
    if args.event:
        event = uuid.UUID(args.event)
    else:
        event = make_event("Bench rebuild", tickets=1, batch=1)
    kinds = {"product": store.add_many}
    if args.compare:
        kinds["redis-py"] = functools.partial(_add_many_redis_py, store)
        kinds["redis-py+thread"] = functools.partial(_add_many_redis_py_thread, store)
    try:
        if not args.event:
            started = time.perf_counter()
            seed_waiting(event, "rebuild", args.waiting)
            print(f"seeded {args.waiting:,} in {time.perf_counter() - started:.1f} s", flush=True)
        waiting = store_size = 0
        seconds: dict[str, list[float]] = {kind: [] for kind in kinds}
        for run in range(args.runs):
            for kind, add_many in kinds.items():
                store.r.delete(store.waiting_key(event), store.line_key(event))
                started = time.perf_counter()
                with mock.patch.object(store, "add_many", add_many):
                    report = queue_rebuild(event_id=event)
                seconds[kind].append(time.perf_counter() - started)
                waiting = int(report["waiting"])
                store_size = store.size(key=store.waiting_key(event))
                print(f"run {run + 1} {kind}: {waiting:,} in {seconds[kind][-1]:.2f} s", flush=True)
                if store_size != waiting:
                    raise SystemExit("the rebuilt set does not hold the whole line")
        for kind, values in seconds.items():
            print(
                f"{kind}: rebuild of {waiting:,}: median {statistics.median(values):.2f} s, "
                f"min {min(values):.2f} s, max {max(values):.2f} s"
            )
        print(f"(load avg {os.getloadavg()[0]:.1f})")
    finally:
        if not args.keep and not args.event:
            cleanup([event])


def _add_many_redis_py(
    store: QueueStore, *, key: str, members: Iterable[tuple[str, int]], only_existing: bool = False
) -> int:
    """The same writes with redis-py's own pipeline: ZADDs of 10,000 members,
    sent ten at a time."""
    pipe = store.r.pipeline(transaction=False)
    sent = 0
    rows = iter(members)
    while batch := dict(itertools.islice(rows, 10_000)):
        pipe.zadd(key, batch, xx=only_existing)
        sent += len(batch)
        if len(pipe) >= 10:
            pipe.execute()
    pipe.execute()
    return sent



def _add_many_redis_py_thread(
    store: QueueStore, *, key: str, members: Iterable[tuple[str, int]], only_existing: bool = False
) -> int:
    """The same, each pipeline of ten sent from a second thread while this
    one reads the next rows from Postgres."""
    sent = 0
    rows = iter(members)
    with ThreadPoolExecutor(max_workers=1) as writer:
        pending: Future | None = None
        while True:
            pipe = store.r.pipeline(transaction=False)
            for _ in range(10):
                batch = dict(itertools.islice(rows, 10_000))
                if not batch:
                    break
                pipe.zadd(key, batch, xx=only_existing)
                sent += len(batch)
            if pending is not None:
                pending.result()
            if not len(pipe):
                return sent
            pending = writer.submit(pipe.execute)


if __name__ == "__main__":
    main()
