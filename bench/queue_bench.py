"""Waiting-room benchmark: prints figures, asserts nothing (not a test).

    DATABASE_URL=... REDIS_URL=... python bench/queue_bench.py [--url http://host:port]

Use a throwaway database: the run adds about 1.05 million customers and queue
entries (removed at the end unless --keep). Without --url it starts granian
itself (as `make run` does, DEBUG off; `--server gunicorn` for the comparison)
against the same DATABASE_URL / REDIS_URL;
with --url the server must use the same database and Redis.

In one run it measures:
  1. HTTP joins at --clients concurrent clients, queue at 1,000 waiting:
     throughput, p50, p99 (full join: auth, checks, INSERT, ZADD, position, ETA)
  2. HTTP position reads per second, p50, p99; then the public line state
     (GET queue/state/: no sign-in, one Redis read) straight from the server,
     and through nginx's micro-cache as compose ships it (bench/nginx_cache.py,
     Debian's nginx: `make bench-tools`; its CPU is counted)
  3. the bare-client baseline: plain psycopg + redis-py doing the same INSERT +
     ZADD from 2 processes x 20 threads, no HTTP; and the ratio of 1 to it;
     then the framework's floor through the same server (bench/floor_urls.py):
     plain Django views doing only that INSERT + ZADD, only a ZRANK, nothing.
     The join's ratio cannot pass the floor's; what 1 and 2 cost above the
     floor is ours
  4. the Redis rebuild of 1,000,000 waiting entries (FLUSH of the event's keys,
     then queueing.services.queue_rebuild)
  5. HTTP joins again with 1,000,000 waiting (is p99 flat as the queue grows?)
  6. one admission tick admitting 5,000 (Postgres, Redis, token minting and
     pushes), at ~20,000 and at 1,000,000 waiting
The load generator is wrk (Debian package `wrk`) when installed, else a
small asyncio HTTP/1.1 client in 2
processes (which itself uses a good share of a 2-core machine's CPU). Each
phase also prints the CPU it cost per request in the server, in
Postgres and Redis (every such process on the machine) and in the client.
How each of these costs grows from 1,000 to 1,000,000 waiting: growth_bench.py.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import shutil
import sys
import threading
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import http_load as hl
from bench.http_load import PUBLIC, SERVERS, fmt, http_load, line, start_server, stop
from bench.nginx_cache import Nginx
from bench.queue_setup import (
    cleanup,
    django_setup,
    make_customers,
    make_event,
    seed_waiting,
    tokens_for,
)

# --- the bare-client baseline -----------------------------------------------------------


def _baseline_process(args: tuple) -> tuple:
    database_url, redis_url, table, key, event_id, customers, threads, start_at = args
    import psycopg
    import redis

    sql = (
        f"INSERT INTO {table} (id, event_id, customer_id, status, score, prequeue, joined_at) "  # noqa: S608
        "VALUES (%s, %s, %s, 'WAITING', %s, false, now())"
    )
    chunks = [customers[i::threads] for i in range(threads)]
    done = [0] * threads

    def run(i: int) -> None:
        conn = psycopg.connect(database_url, autocommit=True)
        r = redis.Redis.from_url(redis_url)
        for customer in chunks[i]:
            score = time.time_ns() // 1000
            conn.execute(sql, (uuid.uuid4(), event_id, customer, score))
            r.zadd(key, {customer: score})
            done[i] += 1
        conn.close()

    while time.time() < start_at:
        time.sleep(0.001)
    began = time.time()
    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return began, time.time(), sum(done)


def baseline(event_id: uuid.UUID, customers: list[str]) -> dict:
    """The same writes as a join, without Django: the ceiling to compare with."""
    from queueing.models import QueueEntry
    from queueing.store import QueueStore

    table, key = QueueEntry._meta.db_table, QueueStore.waiting_key(event_id)
    procs, threads = 2, 20
    start_at = time.time() + 0.5
    with mp.get_context("spawn").Pool(procs) as pool:
        results = pool.map(
            _baseline_process,
            [
                (
                    os.environ["DATABASE_URL"],
                    os.environ["REDIS_URL"],
                    table,
                    key,
                    str(event_id),
                    customers[i::procs],
                    threads,
                    start_at,
                )
                for i in range(procs)
            ],
        )
    began, ended = min(r[0] for r in results), max(r[1] for r in results)
    total = sum(r[2] for r in results)
    return {"ops": total, "per_second": total / (ended - began)}


# --- direct measurements -----------------------------------------------------------------


def rebuild(event_id: uuid.UUID) -> dict:
    from queueing.services import queue_rebuild
    from queueing.store import queue_store

    store = queue_store()
    store.r.delete(store.waiting_key(event_id), store.admitted_key(event_id))
    started = time.perf_counter()
    report = queue_rebuild(event_id=event_id)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "waiting_added": report["waiting_added"]}


def tick(event_id: uuid.UUID) -> dict:
    from queueing.services import admission_tick_event

    started = time.perf_counter()
    report = admission_tick_event(event_id=event_id)
    return {
        "seconds": time.perf_counter() - started,
        "admitted": report.admitted,
        "timings_ms": report.timings_ms,
    }


def measure_state(
    url: str, pid: int | None, args: argparse.Namespace, events: list[uuid.UUID]
) -> dict[str, dict]:
    """The public line state of an event with 1,000 waiting, as its tick
    wrote it: straight from the server, then through nginx's cache."""
    from queueing.services import admission_tick_event

    event = make_event("Bench state", tickets=1, batch=1)
    events.append(event)
    seed_waiting(event, "state", 1_000)
    rebuild(event)
    path = f"/api/v1/events/{event}/queue/state/"
    loads = [(path, PUBLIC)] * args.reads
    results = {}
    admission_tick_event(event_id=event)  # writes the state (it lives three ticks)
    print(f"   direct: GET {path.split('/', 3)[-1]}", flush=True)
    results["state"] = http_load(url, "GET", loads, args.clients, pid)
    print(fmt(results["state"]), flush=True)
    try:
        proxy = Nginx(url)
    except FileNotFoundError as exc:
        print(f"   through nginx: skipped ({exc})", flush=True)
        return results
    with proxy:
        admission_tick_event(event_id=event)
        print(f"   through nginx's cache ({proxy.url})", flush=True)
        results["nginx"] = http_load(proxy.url, "GET", loads, args.clients, pid, proxy.pid)
        print(fmt(results["nginx"]), flush=True)
    return results


def measure_floor(
    url: str, pid: int | None, args: argparse.Namespace, event: uuid.UUID, in_line: list
) -> tuple[uuid.UUID, dict[str, dict]]:
    """The same loads on bench/floor_urls.py's plain Django views: the stack's
    own cost, for the join's ratio and the read's rate to be read against.
    Returns the floor's event (for the cleanup) and the figures."""
    floor_event = make_event("Bench floor", tickets=1, batch=1)
    joiners = [c for c, _ in make_customers("floor", args.joins)]
    readers = [c for c, _ in random.sample(in_line, min(len(in_line), 5_000))]
    loads = {
        "join": ("POST", f"/api/v1/floor/{floor_event}/join/", joiners),
        "position": ("GET", f"/api/v1/floor/{event}/position/", readers),
        "empty": ("GET", f"/api/v1/floor/{event}/empty/", readers),
    }
    results = {}
    for kind, (method, path, customers) in loads.items():
        print(f"   floor {kind}: {method} {path.split('/', 5)[-1]}", flush=True)
        if kind != "join":  # a join's customer joins once; the reads repeat theirs
            customers = [random.choice(customers) for _ in range(args.reads)]
        results[kind] = http_load(url, method, [(path, c) for c in customers], args.clients, pid)
        print(fmt(results[kind]), flush=True)
    return floor_event, results


def ratio_of(a: dict, b: dict) -> float:
    return a["per_second"] / b["per_second"] if b["per_second"] else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--url", help="a running server (same DATABASE_URL/REDIS_URL); default: start --server"
    )
    parser.add_argument("--server", choices=SERVERS, default="granian", help="(granian)")
    parser.add_argument("--workers", type=int, default=2, help="server workers (default 2)")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="requests a worker runs at once (granian: WEB_THREADS); gunicorn: > 1 means"
        " gthread workers",
    )
    parser.add_argument(
        "--clients", type=int, default=128, help="concurrent HTTP clients (default 128)"
    )
    parser.add_argument(
        "--joins",
        type=int,
        default=60_000,
        help="customers (tokens) per join phase; with wrk each phase runs --seconds",
    )
    parser.add_argument("--reads", type=int, default=20_000, help="position reads (tokens)")
    parser.add_argument("--seconds", type=int, default=15, help="length of a wrk phase")
    parser.add_argument("--baseline-ops", type=int, default=20_000)
    parser.add_argument("--big", type=int, default=1_000_000, help="waiting entries for rebuild/1M")
    parser.add_argument("--batch", type=int, default=5_000, help="admission batch to time")
    parser.add_argument("--keep", action="store_true", help="leave the benchmark data in place")
    parser.add_argument(
        "--python-client",
        action="store_true",
        help="use the built-in asyncio client even when wrk is installed",
    )
    args = parser.parse_args()
    hl.USE_WRK = not args.python_client and shutil.which("wrk") is not None
    hl.WRK_SECONDS = args.seconds

    for var in ("DATABASE_URL", "REDIS_URL"):
        if var not in os.environ:
            raise SystemExit(f"{var} must be set (use a throwaway database)")
    django_setup()
    from django.db import connection

    print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}", flush=True)
    print(f"load generator: {'wrk' if hl.USE_WRK else 'built-in asyncio client'}", flush=True)
    events: list[uuid.UUID] = []
    server = None
    try:
        url, pid = args.url, None
        if url is None:
            server, url = start_server(
                args.workers, args.threads, args.server, settings="bench.floor_settings"
            )
            pid = server.pid
            if args.server == "gunicorn":
                kind = f"gthread x {args.threads} threads" if args.threads > 1 else "sync"
            else:
                kind = f"WSGI, {args.threads} blocking thread(s) each,"
            print(f"server: {args.server}, {args.workers} {kind} workers, {url}", flush=True)
        small = make_event("Bench small", tickets=args.batch, batch=args.batch)
        events.append(small)
        seed_waiting(small, "small", 1_000)
        rebuild(small)
        joiners = make_customers("join", args.joins)
        tokens = tokens_for(joiners)

        print(
            f"\n1. HTTP join, {args.clients} clients, 1,000 already waiting",
            flush=True,
        )
        path = f"/api/v1/events/{small}/queue/"
        join_small = http_load(url, "POST", [(path, t) for t in tokens], args.clients, pid)
        print(fmt(join_small), flush=True)

        print(f"\n2. HTTP position reads, {args.clients} clients", flush=True)
        rpath = f"/api/v1/events/{small}/queue/position/"
        from queueing.models import QueueEntry

        queued = {
            str(c)
            for c in QueueEntry.objects.filter(event_id=small, status="WAITING").values_list(
                "customer_id", flat=True
            )
        }
        in_line = [(c, e) for c, e in joiners if c in queued]
        reader_tokens = tokens_for(random.sample(in_line, min(len(in_line), 5_000)))
        reads = [(rpath, random.choice(reader_tokens)) for _ in range(args.reads)]
        position = http_load(url, "GET", reads, args.clients, pid)
        print(fmt(position), flush=True)

        print(f"\n2b. the public line state, {args.clients} clients", flush=True)
        state = measure_state(url, pid, args, events)

        print(
            "\n3. bare-client baseline: psycopg + redis-py INSERT + ZADD, 2 processes x 20 threads",
            flush=True,
        )
        bare_event = make_event("Bench baseline", tickets=1, batch=1)
        events.append(bare_event)
        connection.close()  # the baseline processes are spawned; the server holds its own
        base = baseline(bare_event, [c for c, _ in joiners[: args.baseline_ops]])
        ratio = join_small["per_second"] / base["per_second"]
        print(f"   {base['per_second']:.0f} ops/s ({base['ops']} ops)")
        print(f"   ratio HTTP join / baseline = {ratio:.2f}", flush=True)
        floor = None
        if args.url is None:
            floor_event, floor = measure_floor(url, pid, args, small, in_line)
            events.append(floor_event)
            floor_ratio = floor["join"]["per_second"] / base["per_second"]
            print(f"   ratio floor join / baseline = {floor_ratio:.2f}", flush=True)

        print(f"\n4. rebuild of {args.big:,} waiting entries", flush=True)
        big = make_event("Bench big", tickets=args.batch, batch=args.batch)
        events.append(big)
        started = time.perf_counter()
        seed_waiting(big, "big", args.big)
        print(f"   (seeded in Postgres in {time.perf_counter() - started:.1f} s)")
        result = rebuild(big)
        print(f"   {result['waiting_added']:,} re-added in {result['seconds']:.2f} s", flush=True)

        print(f"\n5. HTTP join with {args.big:,} waiting, {args.clients} clients", flush=True)
        joiners_big = make_customers("join-big", args.joins)
        path = f"/api/v1/events/{big}/queue/"
        join_big = http_load(
            url, "POST", [(path, t) for t in tokens_for(joiners_big)], args.clients, pid
        )
        print(fmt(join_big))
        growth = join_big["p99_ms"] / join_small["p99_ms"]
        print(f"   p99 at {args.big:,} / p99 at 1,000 = {growth:.2f}", flush=True)

        print(f"\n6. one admission tick of {args.batch:,}", flush=True)
        from queueing.selectors import waiting_count

        for event_id in (small, big):
            label = f"{waiting_count(event_id=event_id):,} waiting"
            result = tick(event_id)
            ms = result["seconds"] * 1000
            print(
                f"   at {label}: admitted {result['admitted']:,} in {ms:.0f} ms",
                result["timings_ms"],
                flush=True,
            )

        print("\nsummary")
        print(line("join", join_small))
        print(f"   {'baseline':<14} {base['per_second']:8.0f}/s  ratio {ratio:.2f}")
        print(line("join @big", join_big))
        print(line("position read", position))
        for kind, result in state.items():
            print(line("line state" if kind == "state" else "state @nginx", result))
        if floor is not None:
            for kind in ("join", "position", "empty"):
                print(line(f"floor {kind}", floor[kind]))
        print("ratios (same run)")
        rates = {"join": join_small, "read": position}
        if floor is not None:
            print(f"   join / floor join {ratio_of(rates['join'], floor['join']):.2f}")
            print(f"   position read / floor read {ratio_of(rates['read'], floor['position']):.2f}")
        for kind, result in state.items():
            where = "direct" if kind == "state" else "through nginx"
            print(f"   line state {where} / position read {ratio_of(result, position):.2f}")
    finally:
        if server is not None:
            stop(server)
        if not args.keep:
            cleanup(events)


if __name__ == "__main__":
    main()
