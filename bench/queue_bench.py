"""Waiting-room benchmark: prints figures, asserts nothing (not a test).

    DATABASE_URL=... REDIS_URL=... python bench/queue_bench.py [--url http://host:port]

Use a throwaway database: the run adds about 1.05 million customers and queue
entries (removed at the end unless --keep). Without --url it starts gunicorn
itself (sync workers, DEBUG off) against the same DATABASE_URL / REDIS_URL;
with --url the server must use the same database and Redis.

In one run it measures:
  1. HTTP joins at --clients concurrent clients, queue at 1,000 waiting:
     throughput, p50, p99 (full join: auth, checks, INSERT, ZADD, position, ETA)
  2. HTTP position reads per second, p50, p99
  3. the bare-client baseline: plain psycopg + redis-py doing the same INSERT +
     ZADD from 2 processes x 20 threads, no HTTP; and the ratio of 1 to it
  4. the Redis rebuild of 1,000,000 waiting entries (FLUSH of the event's keys,
     then queueing.services.queue_rebuild)
  5. HTTP joins again with 1,000,000 waiting (is p99 flat as the queue grows?)
  6. one admission tick admitting 5,000 (Postgres, Redis, token minting and
     pushes), at ~20,000 and at 1,000,000 waiting
The load generator is wrk (Debian package `wrk`) when installed, as in
SPEC.md's serving measurements, else a small asyncio HTTP/1.1 client in 2
processes (which itself uses a good share of a 2-core machine's CPU). Each
phase also prints the CPU it cost per request in the server (gunicorn), in
Postgres and Redis (every such process on the machine) and in the client.
How each of these costs grows from 1,000 to 1,000,000 waiting: growth_bench.py.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairqueue.settings")
# The bench mints customer tokens and the server checks them: one key for both.
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-" + "k" * 40)
os.environ.setdefault("LOG_LEVEL", "WARNING")
EMAIL_DOMAIN = "bench.invalid"


# --- setup -----------------------------------------------------------------------


def django_setup() -> None:
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def make_event(name: str, *, tickets: int, batch: int) -> uuid.UUID:
    from django.utils import timezone

    from events.models import Organizer
    from events.services import TierSpec, event_activate, event_create

    organizer, _ = Organizer.objects.get_or_create(name="Benchmark organizer")
    now = timezone.now()
    event = event_create(
        organizer=organizer,
        name=f"{name} {uuid.uuid4().hex[:8]}",
        sale_start=now - timedelta(minutes=1),
        sale_end=now + timedelta(days=1),
        tiers=[TierSpec("General", 1_000_00, tickets)],
        admission_batch_size=batch,
        max_active_admitted=1_000_000,
    )
    event_activate(event_id=event.id)
    return event.id


def make_customers(tag: str, n: int) -> list[tuple[str, str]]:
    """n customers in one statement; returns (id, email)."""
    from django.db import connection

    from fairqueue.core.models import Customer

    table = Customer._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (id, email, created_at) "  # noqa: S608
            "SELECT gen_random_uuid(), %s || i || %s, now() FROM generate_series(1, %s) i "
            "RETURNING id::text, email",
            [f"bench-{tag}-", f"@{EMAIL_DOMAIN}", n],
        )
        return cursor.fetchall()


def seed_waiting(event_id: uuid.UUID, tag: str, n: int) -> None:
    """n WAITING entries (and their customers) straight in Postgres, ahead of
    any later joiner, in batches."""
    from django.db import connection

    from fairqueue.core.models import Customer
    from queueing.models import QueueEntry

    customers, entries = Customer._meta.db_table, QueueEntry._meta.db_table
    base = time.time_ns() // 1000 - 10**10
    step = 250_000
    with connection.cursor() as cursor:
        for start in range(0, n, step):
            count = min(step, n - start)
            cursor.execute(
                f"WITH c AS (INSERT INTO {customers} (id, email, created_at) "  # noqa: S608
                "SELECT gen_random_uuid(), %s || i || %s, now() "
                "FROM generate_series(%s, %s) i RETURNING id) "
                f"INSERT INTO {entries} (id, event_id, customer_id, status, score, prequeue, "
                "joined_at) SELECT gen_random_uuid(), %s, c.id, 'WAITING', "
                "%s + row_number() OVER (), false, now() FROM c",
                [
                    f"bench-{tag}-",
                    f"@{EMAIL_DOMAIN}",
                    start + 1,
                    start + count,
                    event_id,
                    base + start,
                ],
            )
        cursor.execute("ANALYZE " + entries)


def tokens_for(customers: list[tuple[str, str]]) -> list[str]:
    from fairqueue.core.tokens import customer_token_issue

    return [customer_token_issue(customer_id=uuid.UUID(c), email=e)[0] for c, e in customers]


def cleanup(event_ids: list[uuid.UUID]) -> None:
    from django.db import connection

    from events.models import Event, Ticket, TicketTier
    from fairqueue.core.models import Customer
    from fairqueue.redis import get_redis
    from queueing.models import QueueEntry

    ids = [str(e) for e in event_ids]
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {QueueEntry._meta.db_table} WHERE event_id::text = ANY(%s)",  # noqa: S608
            [ids],
        )
        cursor.execute(
            f"DELETE FROM {Ticket._meta.db_table} WHERE tier_id IN "  # noqa: S608
            f"(SELECT id FROM {TicketTier._meta.db_table} WHERE event_id::text = ANY(%s))",
            [ids],
        )
        cursor.execute(
            f"DELETE FROM {TicketTier._meta.db_table} WHERE event_id::text = ANY(%s)",  # noqa: S608
            [ids],
        )
        cursor.execute(
            f"DELETE FROM {Event._meta.db_table} WHERE id::text = ANY(%s)",  # noqa: S608
            [ids],
        )
        cursor.execute(
            f"DELETE FROM {QueueEntry._meta.db_table} WHERE customer_id IN "  # noqa: S608
            f"(SELECT id FROM {Customer._meta.db_table} WHERE email LIKE %s)",
            [f"bench-%@{EMAIL_DOMAIN}"],
        )
        cursor.execute(
            f"DELETE FROM {Customer._meta.db_table} WHERE email LIKE %s",  # noqa: S608
            [f"bench-%@{EMAIL_DOMAIN}"],
        )
    r = get_redis()
    for event_id in ids:
        keys = list(r.scan_iter(match=f"fq:{{{event_id}}}:*", count=1000))
        if keys:
            r.delete(*keys)


# --- the server ------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(workers: int, threads: int = 1) -> tuple[subprocess.Popen, str]:
    """gunicorn on a free port: sync workers (threads=1, as production runs),
    or gthread workers with keep-alive when threads > 1."""
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_DEBUG": "false",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    argv = [
        sys.executable,
        "-m",
        "gunicorn",
        "fairqueue.wsgi:application",
        "--workers",
        str(workers),
        *(["--worker-class", "gthread", "--threads", str(threads)] if threads > 1 else []),
        "--bind",
        f"127.0.0.1:{port}",
        "--backlog",
        "4096",
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen(argv, env=env, cwd=ROOT, start_new_session=True)  # noqa: S603
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1) as response:  # noqa: S310
                if response.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("gunicorn did not come up")


def stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


# --- where the CPU goes -------------------------------------------------------------

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm may hold spaces: split after its closing parenthesis
    name = raw[raw.index("(") + 1 : raw.rindex(")")]
    return [name, *raw[raw.rindex(")") + 2 :].split()]


def cpu_snapshot(server_pid: int | None) -> dict[str, float]:
    """CPU seconds so far of the server (gunicorn master and workers), and of
    every postgres and redis-server process on the machine."""
    totals = {"server": 0.0, "postgres": 0.0, "redis": 0.0}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is None:
            continue
        name, ppid = stat[0], int(stat[2])
        seconds = (int(stat[12]) + int(stat[13])) / _TICK  # utime + stime
        if server_pid is not None and server_pid in (int(entry.name), ppid):
            totals["server"] += seconds
        elif name.startswith("postgres"):
            totals["postgres"] += seconds
        elif name.startswith("redis-server"):
            totals["redis"] += seconds
    return totals


def cpu_per_request(before: dict, after: dict, client_cpu: float, requests: int) -> str:
    used = {k: after[k] - before[k] for k in before}
    used["client"] = client_cpu
    parts = [f"{k} {1e6 * v / requests:.0f}" for k, v in used.items()]
    return "   CPU per request (us): " + ", ".join(parts) + f"  (load avg {os.getloadavg()[0]:.1f})"


# --- the HTTP load generator -------------------------------------------------------


async def _requests(host: str, port: int, payloads: list[bytes], concurrency: int) -> tuple:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    index = 0

    async def worker() -> None:
        nonlocal index
        while index < len(payloads):
            payload = payloads[index]
            index += 1
            started = time.perf_counter()
            try:
                reader, writer = await asyncio.open_connection(host, port)
                writer.write(payload)
                data = await reader.read()
                writer.close()
                status = int(data[9:12])
            except (OSError, ValueError):
                status = 0
            latencies.append(time.perf_counter() - started)
            statuses[status] = statuses.get(status, 0) + 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return started, time.perf_counter(), latencies, statuses


def _process(args: tuple) -> tuple:
    host, port, payloads, concurrency, start_at = args
    while time.time() < start_at:
        time.sleep(0.001)
    cpu = time.process_time()
    started, ended, latencies, statuses = asyncio.run(_requests(host, port, payloads, concurrency))
    cpu = time.process_time() - cpu
    return time.time() - (ended - started), time.time(), latencies, statuses, cpu


WRK_SCRIPT = r"""
-- Each request carries the next token of this thread's share (tokens split
-- between wrk's threads, taken in turn). Prints one BENCHJSON line.
local counter = 0
function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
end
function init(args)
  method, path, nthreads = args[1], args[2], tonumber(args[4])
  tokens = {}
  local i = 0
  for line in io.lines(args[3]) do
    if i % nthreads == tid then tokens[#tokens + 1] = line end
    i = i + 1
  end
  sent = 0
end
function request()
  sent = sent + 1
  local token = tokens[(sent - 1) % #tokens + 1]
  return wrk.format(method, path, {["Authorization"] = "Bearer " .. token,
                                   ["Content-Length"] = "0"})
end
function done(summary, latency, requests)
  io.write(string.format(
    'BENCHJSON {"requests": %d, "duration_us": %d, "non2xx": %d, "p50_us": %d, ' ..
    '"p99_us": %d, "max_us": %d, "errors": %d}\n',
    summary.requests, summary.duration, summary.errors.status, latency:percentile(50),
    latency:percentile(99), latency.max,
    summary.errors.connect + summary.errors.read + summary.errors.write +
    summary.errors.timeout))
end
"""


def http_load_wrk(
    url: str, method: str, path: str, tokens: list[str], clients: int, server_pid: int | None
) -> dict:
    """The same load through wrk for ``WRK_SECONDS`` (C, one connection per
    client, re-opened after each answer since sync workers close it): far less
    client CPU on the same machine than the Python client, as in SPEC.md's
    measurements. A join token used twice answers 409: give more tokens than
    the seconds times the rate, the 409s are reported."""
    import json
    import resource
    import tempfile

    threads = 2
    with tempfile.TemporaryDirectory() as tmp:
        script, token_file = Path(tmp, "load.lua"), Path(tmp, "tokens.txt")
        script.write_text(WRK_SCRIPT)
        token_file.write_text("\n".join(tokens) + "\n")
        argv = ["wrk", f"-t{threads}", f"-c{clients}", f"-d{WRK_SECONDS}s", "--timeout", "10s"]
        argv += ["-s", str(script), url, "--", method, path, str(token_file), str(threads)]
        cpu_before = cpu_snapshot(server_pid)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout  # noqa: S603
        children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_after = cpu_snapshot(server_pid)
    line = next(x for x in out.splitlines() if x.startswith("BENCHJSON "))
    r = json.loads(line.removeprefix("BENCHJSON "))
    client_cpu = (children_after.ru_utime + children_after.ru_stime) - (
        children.ru_utime + children.ru_stime
    )
    ok = r["requests"] - r["non2xx"] - r["errors"]
    return {
        "cpu": cpu_per_request(cpu_before, cpu_after, client_cpu, r["requests"]),
        "requests": r["requests"],
        "ok": ok,
        "statuses": {"non-2xx": r["non2xx"], "errors": r["errors"]},
        "per_second": ok / (r["duration_us"] / 1e6),
        "p50_ms": r["p50_us"] / 1000,
        "p99_ms": r["p99_us"] / 1000,
        "max_ms": r["max_us"] / 1000,
    }


def http_load(
    url: str,
    method: str,
    path_token: list[tuple[str, str]],
    clients: int,
    server_pid: int | None = None,
) -> dict:
    if USE_WRK and len({p for p, _ in path_token}) == 1:
        return http_load_wrk(
            url, method, path_token[0][0], [t for _, t in path_token], clients, server_pid
        )
    parts = urlsplit(url)
    host, port = parts.hostname, parts.port or 80
    payloads = [
        (
            f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
            "Content-Length: 0\r\nConnection: close\r\n\r\n"
        ).encode()
        for path, token in path_token
    ]
    procs = 2
    chunks = [payloads[i::procs] for i in range(procs)]
    start_at = time.time() + 0.5
    with mp.get_context("fork").Pool(procs) as pool:
        cpu_before = cpu_snapshot(server_pid)
        results = pool.map(
            _process, [(host, port, chunk, clients // procs, start_at) for chunk in chunks]
        )
        cpu_after = cpu_snapshot(server_pid)
    began = min(r[0] for r in results)
    ended = max(r[1] for r in results)
    latencies = sorted(lat for r in results for lat in r[2])
    statuses: dict[int, int] = {}
    for r in results:
        for status, count in r[3].items():
            statuses[status] = statuses.get(status, 0) + count
    ok = sum(count for status, count in statuses.items() if 200 <= status < 300)
    return {
        "cpu": cpu_per_request(cpu_before, cpu_after, sum(r[4] for r in results), len(latencies)),
        "requests": len(latencies),
        "ok": ok,
        "statuses": statuses,
        "per_second": ok / (ended - began),
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[int(len(latencies) * 0.99)],
        "max_ms": 1000 * latencies[-1],
    }


USE_WRK = False  # set in main(): wrk when installed, unless --python-client
WRK_SECONDS = 15


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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--url", help="a running server (same DATABASE_URL/REDIS_URL); default: start gunicorn"
    )
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers (default 4)")
    parser.add_argument(
        "--threads", type=int, default=1, help="threads per worker: > 1 means gthread workers"
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
    global USE_WRK, WRK_SECONDS
    USE_WRK = not args.python_client and shutil.which("wrk") is not None
    WRK_SECONDS = args.seconds

    for var in ("DATABASE_URL", "REDIS_URL"):
        if var not in os.environ:
            raise SystemExit(f"{var} must be set (use a throwaway database)")
    django_setup()
    from django.db import connection

    print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}", flush=True)
    print(f"load generator: {'wrk' if USE_WRK else 'built-in asyncio client'}", flush=True)
    events: list[uuid.UUID] = []
    server = None
    try:
        url, pid = args.url, None
        if url is None:
            server, url = start_gunicorn(args.workers, args.threads)
            pid = server.pid
            kind = f"gthread x {args.threads} threads" if args.threads > 1 else "sync"
            print(f"server: gunicorn, {args.workers} {kind} workers, {url}", flush=True)
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
    finally:
        if server is not None:
            stop(server)
        if not args.keep:
            cleanup(events)


def fmt(result: dict) -> str:
    r = result
    return (
        f"   {r['per_second']:.0f}/s ok={r['ok']}/{r['requests']} p50={r['p50_ms']:.1f} ms "
        f"p99={r['p99_ms']:.1f} ms max={r['max_ms']:.0f} ms statuses={r['statuses']}\n" + r["cpu"]
    )


def line(label: str, r: dict) -> str:
    rate = f"{r['per_second']:8.0f}/s"
    return f"   {label:<14} {rate}  p50 {r['p50_ms']:.1f} ms  p99 {r['p99_ms']:.1f} ms"


if __name__ == "__main__":
    main()
