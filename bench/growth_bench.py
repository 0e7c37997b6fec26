"""How the waiting room's costs grow with the queue: prints figures, asserts nothing.

    DATABASE_URL=... REDIS_URL=... python bench/growth_bench.py --growth 1000,10000,100000,1000000
    python bench/growth_bench.py --embedded --growth 1000,10000

Use a throwaway database, or --embedded: PostgreSQL and Redis of its own, set
up as `make run` has them (fsync on), in a temporary directory removed at the
end. Each size N gets the same steps, in the same order, on a database that
holds only that size:
  1. fill: N WAITING entries (and their customers) by bulk INSERT, the
     project's own rebuild of the Redis waiting set from them (timed), then
     VACUUM ANALYZE and CHECKPOINT, as autovacuum would after such an insert,
     so that what follows does not pay for the fill
  2. a fresh granian (--workers workers, as `make run` serves, DEBUG off), warmed up by
     --warmup joins and position reads that are not counted
  3. --joins HTTP joins at --clients concurrent clients (to the back of the line)
  4. --reads HTTP position reads by --readers customers spread evenly over
     the line, front to back
  5. memory: Redis used_memory and the waiting set's bytes per member (MEMORY
     USAGE), each web worker's RSS after 3 and 4, the Postgres size of the
     queue table and its indexes; the server stops
  6. --direct joins and position reads one at a time from this process, no
     HTTP: the queue's own work without waiting behind other requests
  7. admission ticks of the default batch and of 1,000, --ticks of each (the
     median is shown); each tick's customers are put back in line afterwards,
     so every tick meets the same queue
  8. the beat's queue reconciliation: the usual pass and the full one
  9. the size's rows are deleted and vacuumed away (the last size's go with
     the services under --embedded)
CPU per request is that of this run's own processes only: the web server's main process
and workers, the PostgreSQL server behind DATABASE_URL and the Redis server
behind REDIS_URL, read from /proc with their exited children. It is steadier
than latency on a shared machine. The HTTP load generator is bench/http_load.py's
(wrk when installed, else its asyncio client).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("LOG_LEVEL", "ERROR")  # this process only: the server's is set apart

from bench import http_load as hl
from bench import queue_bench as qb
from bench import queue_setup as qs
from bench._common import percentile
from bench.stack import children_of, process_tree_cpu, rss_mb

AIM = 1.2  # the aim: join p99 flat within 20 % from 1,000 to 1,000,000 waiting
TICK_BATCH = 1_000  # timed besides the event's default batch
WARM_CALLS = 50  # first calls of a --direct series, not counted


def sql(statement: str, params: list | None = None) -> list[tuple]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


def tables() -> tuple[str, str]:
    from customers.models import Customer
    from queueing.models import QueueEntry

    return QueueEntry._meta.db_table, Customer._meta.db_table


def service_pids() -> dict[str, int]:
    """The PostgreSQL postmaster (our backend's parent) and the Redis server,
    which must run on this machine: their CPU is read from /proc."""
    from fairqueue.redis import get_redis

    backend = hl._stat(sql("SELECT pg_backend_pid()")[0][0])
    pids = {
        "postgres": int(backend[2]) if backend and backend[0].startswith("postgres") else 0,
        "redis": int(get_redis().info("server")["process_id"]),
    }
    for name, pid in pids.items():
        stat = hl._stat(pid) if pid else None
        if stat is None or not stat[0].startswith(name):
            raise SystemExit(f"{name} must run on this machine, outside a container")
    return pids


# --- the steps of one size ----------------------------------------------------------------


def settle() -> str:
    """What autovacuum does after a bulk write, and a checkpoint, so that a
    measurement does not meet the fill's dead rows or dirty pages."""
    from django.db import DatabaseError

    for table in tables():
        sql(f"VACUUM ANALYZE {table}")
    try:
        sql("CHECKPOINT")
    except DatabaseError as exc:  # not a superuser (nor pg_checkpoint): say so, go on
        return f"vacuumed, no CHECKPOINT ({exc})"
    return "vacuumed, checkpointed"


def fill(n: int, batches: list[int]) -> tuple[uuid.UUID, dict]:
    started = time.perf_counter()
    event_id = qs.make_event(f"Growth {n}", tickets=max(batches), batch=batches[0])
    qs.seed_waiting(event_id, f"g{n}", n)
    seeded = time.perf_counter() - started
    rebuilt = qb.rebuild(event_id)
    if rebuilt["waiting_added"] != n:
        raise SystemExit(f"the rebuild re-added {rebuilt['waiting_added']} of {n}")
    started = time.perf_counter()
    note = settle()
    print(
        f"   fill: seeded {seeded:.1f} s, rebuilt into Redis {rebuilt['seconds']:.2f} s, "
        f"{note} {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    return event_id, {"rebuild_s": rebuilt["seconds"]}


def readers(event_id: uuid.UUID, count: int) -> list[tuple[str, str]]:
    """(customer id, email) of ``count`` waiting customers at evenly spaced
    places of the line, the first and the last included."""
    from queueing.selectors import waiting_count

    entries, customers = tables()
    total = waiting_count(event_id=event_id)
    count = min(count, total)
    ranks = sorted({1 + round(i * (total - 1) / max(1, count - 1)) for i in range(count)})
    return sql(
        f"SELECT q.customer_id::text, c.email FROM ("  # noqa: S608
        "  SELECT customer_id, row_number() OVER (ORDER BY score, customer_id) AS rn"
        f"  FROM {entries} WHERE event_id = %s AND status = 'WAITING') q "
        f"JOIN {customers} c ON c.id = q.customer_id WHERE q.rn = ANY(%s)",
        [event_id, ranks],
    )


def load(url: str, method: str, requests: list[tuple[str, str]], clients: int, roots: dict):
    """One HTTP phase, with the CPU per request of our own processes."""
    before = process_tree_cpu(roots)
    result = hl.http_load(url, method, requests, clients, roots["web"])
    after = process_tree_cpu(roots)
    result["cpu_us"] = {k: 1e6 * (after[k] - before[k]) / result["requests"] for k in roots}
    cpu = ", ".join(f"{k} {v:.0f}" for k, v in result["cpu_us"].items())
    print(hl.fmt(result).split("\n")[0] + f"\n   CPU per request (us): {cpu}", flush=True)
    return result


def http_phases(event_id: uuid.UUID, n: int, args: argparse.Namespace, pids: dict) -> dict:
    out: dict = {}
    server, url = hl.start_server(args.workers)
    try:
        roots = {"web": server.pid, **pids}
        tokens = qs.tokens_for(qs.make_customers(f"g{n}-join", args.warmup + args.join_tokens))
        join_path = f"/api/v1/events/{event_id}/queue/"
        read_path = f"/api/v1/events/{event_id}/queue/position/"
        for method, path in (("POST", join_path), ("GET", read_path)):
            warm = [(path, t) for t in tokens[: args.warmup]]
            hl.http_load(url, method, warm, args.clients, server.pid)

        print(f"   joins, {args.clients} clients:", flush=True)
        joins = [(join_path, t) for t in tokens[args.warmup :]]
        out["join"] = load(url, "POST", joins, args.clients, roots)
        out["line"] = readers(event_id, args.readers)
        reader_tokens = qs.tokens_for(out["line"])
        random.shuffle(reader_tokens)
        print(f"   position reads by {len(reader_tokens):,} customers, front to back:")
        reads = [(read_path, reader_tokens[i % len(reader_tokens)]) for i in range(args.reads)]
        out["read"] = load(url, "GET", reads, args.clients, roots)
        out["web_rss"] = [rss_mb(pid) for pid in children_of(server.pid)]
    finally:
        hl.stop(server)
    return out


def memory(event_id: uuid.UUID) -> dict:
    from fairqueue.redis import get_redis
    from queueing.store import QueueStore

    r, key = get_redis(), QueueStore.waiting_key(event_id)
    members = r.zcard(key)
    return {
        "redis_mb": r.info("memory")["used_memory"] / 2**20,
        "entry_bytes": r.memory_usage(key, samples=0) / members,
        "members": members,
        "pg_mb": sql("SELECT pg_total_relation_size(%s)", [tables()[0]])[0][0] / 2**20,
    }


def direct(event_id: uuid.UUID, n: int, count: int, line: list[tuple[str, str]]) -> dict:
    """queue_join and queue_position called one at a time from this process."""
    from queueing.services import queue_join, queue_position

    joiners = [c for c, _ in qs.make_customers(f"g{n}-direct", count + WARM_CALLS)]
    reading = [line[i % len(line)][0] for i in range(count + WARM_CALLS)]
    out = {}
    for name, call, customers in (("join", queue_join, joiners), ("read", queue_position, reading)):
        latencies = []
        for customer in customers:
            started = time.perf_counter()
            call(event_id=event_id, customer_id=customer)
            latencies.append(1000 * (time.perf_counter() - started))
        latencies = sorted(latencies[WARM_CALLS:])
        out[name] = {"p50_ms": percentile(latencies, 50), "p99_ms": percentile(latencies, 99)}
    return out


def untick(event_id: uuid.UUID) -> None:
    """Put the customers a tick admitted back in line, with their scores, in
    Postgres and Redis."""
    from queueing.store import queue_store

    rows = sql(
        f"UPDATE {tables()[0]} SET status = 'WAITING', admitted_at = NULL, "  # noqa: S608
        "admission_expires_at = NULL WHERE event_id = %s AND status = 'ADMITTED' "
        "RETURNING customer_id::text, score",
        [event_id],
    )
    store = queue_store()
    store.r.delete(store.admitted_key(event_id))
    store.add_many(key=store.waiting_key(event_id), members=rows)


def ticks(event_id: uuid.UUID, batches: list[int], repeats: int) -> dict[int, dict]:
    from events.models import Event

    out = {}
    for batch in batches:
        Event.objects.filter(pk=event_id).update(admission_batch_size=batch)
        runs = []
        for _ in range(repeats):
            runs.append(qb.tick(event_id))
            untick(event_id)
        if short := [r["admitted"] for r in runs if r["admitted"] != batch]:
            raise SystemExit(f"a tick of {batch} admitted {short}")
        median = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
        out[batch] = {"ms": 1000 * median["seconds"], "timings": median["timings_ms"]}
    return out


def reconcile(event_id: uuid.UUID) -> dict[str, float]:
    """Seconds of the beat's queue reconciliation of the event: the usual pass
    (compares sizes) and the full one (every queueing.services.reconcile.FULL_RECONCILE_SECONDS)."""
    from queueing.services import queue_reconcile_event

    out = {}
    for label, full in (("sizes", False), ("full", True)):
        started = time.perf_counter()
        queue_reconcile_event(event_id=event_id, full=full)
        out[label] = time.perf_counter() - started
    return out


def one_size(n: int, args: argparse.Namespace, pids: dict, batches: list[int]) -> dict:
    print(f"\n== {n:,} waiting  (load avg {os.getloadavg()[0]:.1f})", flush=True)
    event_id, result = fill(n, batches)
    try:
        result.update(http_phases(event_id, n, args, pids), n=n)
        result["memory"] = memory(event_id)
        m, rss = result["memory"], ", ".join(f"{x:.0f}" for x in result["web_rss"])
        print(
            f"   memory: Redis {m['redis_mb']:.1f} MB, waiting set {m['members']:,} members at "
            f"{m['entry_bytes']:.0f} B; web workers RSS {rss} MB; queue table {m['pg_mb']:.0f} MB"
        )
        result["direct"] = d = direct(event_id, n, args.direct, result["line"])
        one = (f"{k} p50 {v['p50_ms']:.2f} ms p99 {v['p99_ms']:.2f} ms" for k, v in d.items())
        print("   one at a time, no HTTP: " + "; ".join(one))
        result["ticks"] = ticks(event_id, batches, args.ticks)
        for batch, t in result["ticks"].items():
            print(f"   tick of {batch:,}: {t['ms']:.0f} ms (median of {args.ticks}) {t['timings']}")
        result["reconcile"] = r = reconcile(event_id)
        print(f"   reconciliation: usual pass {r['sizes']:.2f} s, full pass {r['full']:.2f} s")
    finally:
        if not (args.embedded and n == args.sizes[-1]):
            started = time.perf_counter()
            qs.cleanup([event_id])
            settle()
            print(f"   (deleted and vacuumed in {time.perf_counter() - started:.1f} s)", flush=True)
    return result


# --- the report ------------------------------------------------------------------------


def report(results: list[dict], batches: list[int]) -> None:
    heads = [
        "waiting", "joins/s", "join p50 / p99 ms", "join CPU us: web / PG / Redis", "reads/s",
        "read p50 / p99 ms", "one at a time p50 / p99 ms: join; read",
        *[f"tick {b:,} ms" for b in batches], "Redis MB", "B/entry", "web RSS MB",
        "queue table MB", "rebuild s", "reconcile s: usual / full",
    ]  # fmt: skip
    print("\n| " + " | ".join(heads) + " |\n|" + " --- |" * len(heads))
    for r in results:
        j, rd, d, m = r["join"], r["read"], r["direct"], r["memory"]
        cells = [
            f"{r['n']:,}",
            f"{j['per_second']:.0f}",
            f"{j['p50_ms']:.0f} / {j['p99_ms']:.0f}",
            " / ".join(f"{j['cpu_us'][k]:.0f}" for k in ("web", "postgres", "redis")),
            f"{rd['per_second']:.0f}",
            f"{rd['p50_ms']:.0f} / {rd['p99_ms']:.0f}",
            "; ".join(f"{d[k]['p50_ms']:.1f} / {d[k]['p99_ms']:.1f}" for k in ("join", "read")),
            *[f"{r['ticks'][b]['ms']:.0f}" for b in batches],
            f"{m['redis_mb']:.1f}",
            f"{m['entry_bytes']:.0f}",
            f"{max(r['web_rss']):.0f}",
            f"{m['pg_mb']:.0f}",
            f"{r['rebuild_s']:.2f}",
            f"{r['reconcile']['sizes']:.2f} / {r['reconcile']['full']:.2f}",
        ]
        print("| " + " | ".join(cells) + " |")
    if len(results) < 2:
        return
    first, last = results[0], results[-1]
    ratio = last["join"]["p99_ms"] / first["join"]["p99_ms"]
    print(
        f"\njoin p99 at {last['n']:,} / at {first['n']:,} = {ratio:.2f} "
        f"(aim: within {AIM - 1:.0%}, <= {AIM:.2f}): {'met' if ratio <= AIM else 'NOT met'}"
    )
    ratios = {
        "join CPU per request, web + Postgres + Redis": ("join", "cpu_us"),
        "read CPU per request, web + Postgres + Redis": ("read", "cpu_us"),
        "join one at a time, p99": ("direct", "join"),
        "read one at a time, p99": ("direct", "read"),
    }
    for label, (a, b) in ratios.items():
        fig = [sum(x[a][b].values()) if b == "cpu_us" else x[a][b]["p99_ms"] for x in (first, last)]
        print(f"{label}: at {last['n']:,} / at {first['n']:,} = {fig[1] / fig[0]:.2f}")


# --- entry point --------------------------------------------------------------------------


def embedded_services() -> object:
    """The embedded PostgreSQL and Redis of `make run` in a temporary
    directory; returns the stack, to close at the end."""
    from devtools import devstack

    for var in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(var, None)
    base = Path(tempfile.mkdtemp(prefix="fairqueue-growth-"))
    base.chmod(0o711)  # the PostgreSQL system user must reach base/pg
    stack = devstack.Stack()
    stack.temp_dirs.append(base)
    # SignalWatch only records signals: put ours back so Ctrl-C still stops us.
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        # throwaway=False: fsync and synchronous commit on, as in production.
        env = stack.start(base, devstack.SignalWatch(), throwaway=False)
    except BaseException:
        stack.close()
        raise
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    os.environ["DATABASE_URL"], os.environ["REDIS_URL"] = env["DATABASE_URL"], env["REDIS_URL"]
    return stack


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    add = parser.add_argument
    add("--growth", default="1000,10000,100000,1000000", help="queue sizes (1k to 1M)")
    add("--embedded", action="store_true", help="start throwaway PostgreSQL and Redis")
    add("--workers", type=int, default=2, help="granian workers (2)")
    add("--clients", type=int, default=128, help="concurrent HTTP clients (128)")
    add("--joins", type=int, default=4_000, help="HTTP joins per size (4,000)")
    add("--reads", type=int, default=6_000, help="HTTP position reads per size (6,000)")
    add("--readers", type=int, default=1_000, help="customers reading (1,000)")
    add("--direct", type=int, default=2_000, help="joins and reads one at a time (2,000)")
    add("--warmup", type=int, default=400, help="uncounted HTTP joins and reads (400)")
    add("--seconds", type=int, default=10, help="length of a wrk phase (10)")
    add("--ticks", type=int, default=3, help="ticks per batch size (3)")
    add("--python-client", action="store_true", help="never use wrk")
    args = parser.parse_args()
    args.sizes = sorted({int(s.replace("_", "")) for s in args.growth.split(",")})
    hl.USE_WRK = not args.python_client and shutil.which("wrk") is not None
    hl.WRK_SECONDS = args.seconds
    # wrk runs for --seconds and must not run out of fresh customers (a
    # customer's second join is a 409): give it plenty.
    args.join_tokens = max(args.joins, 3_000 * args.seconds) if hl.USE_WRK else args.joins

    stack = embedded_services() if args.embedded else None
    try:
        for var in ("DATABASE_URL", "REDIS_URL"):
            if var not in os.environ:
                raise SystemExit(f"{var} must be set (a throwaway database), or use --embedded")
        qs.django_setup()
        from events.models import Event

        batches = sorted({Event._meta.get_field("admission_batch_size").default, TICK_BATCH})
        generator = f"wrk, {args.seconds} s a phase" if hl.USE_WRK else "asyncio client"
        print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}")
        print(f"load: {generator}, {args.clients} clients; granian {args.workers} workers")
        pids = service_pids()
        started = time.perf_counter()
        results = [one_size(n, args, pids, batches) for n in args.sizes]
        report(results, batches)
        print(f"\nruntime {time.perf_counter() - started:.0f} s")
    finally:
        if stack is not None:
            from django.db import connections

            connections.close_all()
            stack.close()


if __name__ == "__main__":
    main()
