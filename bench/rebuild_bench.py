"""The Redis rebuild of a whole waiting line from Postgres: prints figures,
asserts nothing (not a test).

    DATABASE_URL=... REDIS_URL=... python bench/rebuild_bench.py [--waiting 1000000] [--runs 3]

Use a throwaway database: the run adds --waiting customers and queue entries
(removed at the end unless --keep; --event reuses a line an earlier --keep
run left). It seeds the line in Postgres once, then --runs times drops the
event's waiting set and times ``queue_rebuild`` (the rebuild a wiped Redis
gets from the admission tick, ``rebuild_redis`` and a worker's start),
printing each run and the spread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.queue_setup import cleanup, django_setup, make_event, seed_waiting


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--waiting", type=int, default=1_000_000, help="entries in the line")
    parser.add_argument("--runs", type=int, default=3, help="rebuilds to time")
    parser.add_argument("--keep", action="store_true", help="leave the benchmark data in place")
    parser.add_argument("--event", help="an event seeded by an earlier --keep run: no seeding")
    args = parser.parse_args()
    for var in ("DATABASE_URL", "REDIS_URL"):
        if var not in os.environ:
            raise SystemExit(f"{var} must be set (use a throwaway database)")
    django_setup()
    from queueing.services import queue_rebuild
    from queueing.store import queue_store

    store = queue_store()
    event = uuid.UUID(args.event) if args.event else make_event("Bench rebuild", tickets=1, batch=1)
    try:
        if not args.event:
            started = time.perf_counter()
            seed_waiting(event, "rebuild", args.waiting)
            print(f"seeded {args.waiting:,} in {time.perf_counter() - started:.1f} s", flush=True)
        seconds, waiting = [], 0
        for run in range(args.runs):
            store.r.delete(store.waiting_key(event), store.line_key(event))
            started = time.perf_counter()
            report = queue_rebuild(event_id=event)
            seconds.append(time.perf_counter() - started)
            waiting = int(report["waiting"])
            print(f"run {run + 1}: {waiting:,} in {seconds[-1]:.2f} s", flush=True)
            if store.size(key=store.waiting_key(event)) != waiting:
                raise SystemExit("the rebuilt set does not hold the whole line")
        print(
            f"rebuild of {waiting:,}: median {statistics.median(seconds):.2f} s, "
            f"min {min(seconds):.2f} s, max {max(seconds):.2f} s "
            f"(load avg {os.getloadavg()[0]:.1f})"
        )
    finally:
        if not args.keep and not args.event:
            cleanup([event])


if __name__ == "__main__":
    main()
