"""Claims per second over HTTP: N admitted customers race for M tickets.

    DATABASE_URL=... REDIS_URL=... python bench/claims_bench.py \
        [--customers 5000] [--tickets 5000] [--concurrency 64] [--workers 4]

What it does:
1. Prepares the sale directly in Postgres and Redis, as the admission tick
   leaves it: an ACTIVE event with one tier of ``--tickets`` tickets, its Redis
   counter synced, ``--customers`` customers whose queue entries are ADMITTED
   (Postgres row, Redis admitted set), a customer token and an admission token
   minted for each.
2. Starts granian as `make run` does (``--server gunicorn`` for the
   comparison; ``DJANGO_DEBUG=false``) against the same
   DATABASE_URL / REDIS_URL, and waits for /healthz.
3. Fires every customer's ``POST /api/v1/events/{id}/claims/`` at once through
   ``--concurrency`` connections (aiohttp; 503 Retry-After honoured), and
   records each latency.
4. Checks Postgres: tickets sold == inventory when customers >= tickets, no
   ticket row in two claims, no claim short of rows, nobody with two purchases.

Prints claims/s (successful claims over the span of the run), requests/s,
p50/p99 latency of all claim requests, the answers by status and code, and
the checks; ``--json FILE`` also writes them. The sale's rows stay in the
database (an event named "claims bench <time>").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from datetime import timedelta
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp

from bench._common import Api, Recorder, percentile
from bench.http_load import SERVERS, server_argv, server_env
from bench.production_env import production_env

REPO_ROOT = Path(__file__).resolve().parent.parent


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--customers", type=int, default=5000)
    parser.add_argument("--tickets", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=64, help="connections in flight")
    parser.add_argument("--server", choices=SERVERS, default="granian", help="(granian)")
    parser.add_argument("--workers", type=int, default=2, help="server workers (2)")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="requests a worker runs at once (granian: WEB_THREADS); gunicorn: > 1 means gthread",
    )
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--no-server", action="store_true", help="use an already running server (--url)"
    )
    parser.add_argument("--url", default="", help="base URL with --no-server")
    return parser.parse_args(argv)


def django_setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    production_env(os.environ)  # the server started later inherits the same keys
    import django

    django.setup()


def prepare_sale(*, customers: int, tickets: int) -> dict:
    """Event, tier, tickets, admitted customers and their tokens."""
    from django.utils import timezone

    from bench.queue_setup import seed_admitted
    from customers.revocation import customer_token_authenticate
    from customers.tokens import customer_token_issue
    from events.models import Organizer
    from events.services import TierSpec, event_activate, event_create

    stamp = time.strftime("%Y%m%d-%H%M%S")
    organizer, _ = Organizer.objects.get_or_create(name="Claims bench")
    now = timezone.now()
    event = event_create(
        organizer=organizer,
        name=f"claims bench {stamp}",
        sale_start=now - timedelta(minutes=1),
        sale_end=now + timedelta(hours=2),
        tiers=[TierSpec(name="Regular", price=500_000, inventory=tickets)],
        max_active_admitted=max(customers, 1),
    )
    event_activate(event_id=event.pk)  # syncs the Redis counter on commit
    tier = event.tiers.get()
    buyers = []
    for customer, admission in seed_admitted(event, count=customers, prefix="bench"):
        token = customer_token_issue(customer_id=customer.id, email=customer.email)[0]
        # As the buyer's join and polls (or signing in) leave it: the claim
        # finds the sign-out state in Redis.
        customer_token_authenticate(token)
        buyers.append((token, admission))
    return {"event_id": str(event.pk), "tier_id": str(tier.pk), "buyers": buyers}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(*, server: str, port: int, workers: int, threads: int = 1) -> subprocess.Popen:
    argv = server_argv(server, port=port, workers=workers, threads=threads)
    return subprocess.Popen(argv, cwd=REPO_ROOT, env=server_env(threads), start_new_session=True)  # noqa: S603


def _children(pid: int) -> list[int]:
    try:
        tasks = Path(f"/proc/{pid}/task").iterdir()
        return [int(c) for t in tasks for c in (t / "children").read_text().split()]
    except OSError:
        return []


def tree_cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of a process and its live descendants, from
    /proc (Linux): how much the web tier spent per claim, whatever else the
    machine was doing."""
    tick = os.sysconf("SC_CLK_TCK")
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
        todo.extend(_children(current))
    return total


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine spent busy (all cores), from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def command_cpu_seconds(name: str) -> float:
    """CPU seconds of every live process whose command name is ``name``."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            head, rest = stat.read_text().rsplit(")", 1)
        except OSError:
            continue
        if head.split("(", 1)[1] == name:
            fields = rest.split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def cpu_snapshot(server_pid: int | None) -> dict[str, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "machine": machine_busy_seconds(),
        "web": tree_cpu_seconds(server_pid) if server_pid else 0.0,
        "postgres": command_cpu_seconds("postgres"),
        "redis": command_cpu_seconds("redis-server"),
        "load_generator": usage.ru_utime + usage.ru_stime,
    }


def wait_ready(base: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=2) as resp:  # noqa: S310
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"the server at {base} did not become ready")


async def fire(
    base: str, sale: dict, concurrency: int, keep_alive: bool
) -> tuple[Recorder, Counter, float]:
    rec = Recorder()
    answers: Counter = Counter()
    url = f"/api/v1/events/{sale['event_id']}/claims/"
    # gunicorn's sync workers close every connection: do not try to reuse them.
    connector = aiohttp.TCPConnector(limit=concurrency, force_close=not keep_alive)
    async with aiohttp.ClientSession(connector=connector) as session:
        api = Api(session, base, rec, concurrency=concurrency)

        async def one(bearer: str, admission: str) -> None:
            status, body = await api.call(
                "claim",
                "POST",
                url,
                token=bearer,
                body={"admission_token": admission, "tier_id": sale["tier_id"], "quantity": 1},
            )
            code = body["error"]["code"] if status >= 400 and isinstance(body, dict) else ""
            answers[(status, code)] += 1

        started = time.monotonic()
        await asyncio.gather(*(one(b, a) for b, a in sale["buyers"]))
        wall = time.monotonic() - started
    return rec, answers, wall


def check_invariants(*, event_id: str, tickets: int, customers: int) -> dict:
    """Every invariant that holds mid-sale (console.invariants, as
    ``manage.py check_invariants`` runs it) and the count this run must reach:
    each buyer got a ticket while tickets lasted."""
    from console.invariants import check_invariants as run_checks
    from console.invariants import status_counts

    report = run_checks(event_ids=[event_id])
    held = sum(
        n
        for status, n in status_counts(event_id=event_id)["claims"].items()
        if status != "RELEASED"
    )
    expected = min(tickets, customers)
    return {
        "sold": held,
        "expected": expected,
        "failed": [f"{r.check}: {r.detail}" for _, r in report.failures()],
        "ok": report.ok and held == expected,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    django_setup()
    from django.conf import settings

    # Tokens minted here must verify in the server: the same signing key.
    os.environ.setdefault("TOKEN_SIGNING_KEY", settings.TOKEN_SIGNING_KEY)
    print(f"preparing {args.customers} admitted customers and {args.tickets} tickets ...")
    t = time.monotonic()
    sale = prepare_sale(customers=args.customers, tickets=args.tickets)
    print(f"  prepared in {time.monotonic() - t:.1f}s (event {sale['event_id']})")

    server = None
    base = args.url.rstrip("/")
    if not args.no_server:
        port = args.port or free_port()
        base = f"http://127.0.0.1:{port}"
        server = start_server(
            server=args.server, port=port, workers=args.workers, threads=args.threads
        )
    try:
        wait_ready(base)
        pid = server.pid if server else None
        load_before = os.getloadavg()
        cpu_before = cpu_snapshot(pid)
        keep_alive = args.server != "gunicorn" or args.threads > 1
        rec, answers, wall = asyncio.run(fire(base, sale, args.concurrency, keep_alive))
        cpu_after = cpu_snapshot(pid)
    finally:
        if server is not None:
            os.killpg(server.pid, 15)
            server.wait(timeout=30)

    latencies = sorted(s.latency * 1000 for s in rec.samples["claim"])
    created = answers.get((201, ""), 0)
    checks = check_invariants(
        event_id=sale["event_id"], tickets=args.tickets, customers=args.customers
    )
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_before_run": load_before,
            "load_average_after_run": os.getloadavg(),
        },
        "config": {
            "customers": args.customers,
            "tickets": args.tickets,
            "concurrency": args.concurrency,
            "server": None
            if args.no_server
            else f"{args.server}, {args.workers} workers x {args.threads} threads",
        },
        "claims_per_second": created / wall,
        "requests_per_second": len(latencies) / wall,
        "wall_seconds": wall,
        # Where the CPU went, in ms per claim request: the whole machine, and
        # the web server, Postgres (every postgres process), Redis and this load
        # generator. "machine" minus the rest is the other users of the box.
        "cpu_ms_per_request": {
            part: round((cpu_after[part] - cpu_before[part]) * 1000 / max(1, len(latencies)), 3)
            for part in cpu_before
        },
        "machine_cores_busy": round((cpu_after["machine"] - cpu_before["machine"]) / wall, 2),
        "requests": len(latencies),
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        "max_ms": latencies[-1] if latencies else None,
        "answers": {f"{status} {code}".strip(): n for (status, code), n in answers.items()},
        "checks": checks,
    }
    print(json.dumps(result, indent=2, default=str))
    print(
        f"\n{created} claims in {wall:.2f}s = {result['claims_per_second']:.0f} claims/s "
        f"({result['requests_per_second']:.0f} requests/s), p50 {result['p50_ms']:.1f} ms, "
        f"p99 {result['p99_ms']:.1f} ms; sold {checks['sold']}/{args.tickets}; invariants: "
        + ("; ".join(checks["failed"]) or "all hold")
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2, default=str))
    return 0 if checks["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
