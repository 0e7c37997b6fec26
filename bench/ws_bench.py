"""WebSocket fan-out benchmark: N customers hold the queue WebSocket on ONE
daphne process while admission ticks run. Aims: 10,000 connections, the
admission push reaching p99 of them within 1 s, and a tick costing at most
2 x admitted + sockets / 6 frames (sockets carry news, not the clock).

    .venv/bin/python bench/ws_bench.py --timeout 5              # 10,000 sockets, 1,000 per tick
    .venv/bin/python bench/ws_bench.py --connections 500 --batch 100

PostgreSQL and Redis: DATABASE_URL / REDIS_URL when set (a throwaway database:
the run adds an event and N customers, removed at the end unless --keep), else
embedded ones in a temporary directory, as ``make test`` starts them. daphne
is always our own child: ``config.asgi:application`` with the argv of
``make run`` (devtools.devstack) and DEBUG off.

Steps: an ACTIVE event with N tickets; N customers with WAITING entries in one
SQL statement, then the Redis rebuild (``queue_rebuild``); N WebSockets opened
by aiohttp in --client-procs processes, each waiting for its first message
(the position snapshot); then admission ticks (``admission_tick_event``, the
code the Celery task runs), called here, one after the other, each once the
previous tick's messages have all arrived (or --timeout passed).

Latency is measured per client from the start of the tick's call to the
receipt of its message: its own ``admitted`` push (with its admission token)
for the customers the tick admitted, the line state (``line``, ``served``)
for the next batch (the sockets whose place after the tick is within it);
sockets further back hear the line now and then (queueing/line_sockets.py).
Every frame a tick brings is counted, against 2 x admitted + sockets / 6.
Every process reads the same clock
(``time.monotonic``: CLOCK_MONOTONIC, one per machine), and the clients run in
their own processes so a tick never stalls their event loop. The clients
share the two cores with daphne, Postgres and Redis: their CPU is printed.

An admitted push or a next batch's line state still missing --timeout
seconds after its tick started is lost;
the exit status is 1 when any is lost, any socket failed to connect or was
closed by the server, or any client got a message it should not have (a
second admission, someone else's token).
Figures (every latency) also go to bench/out/ws/ as JSON, daphne's log too.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import percentile
from bench.production_env import production_env
from bench.stack import BENCH_STACK_ENV, healthz_ok
from bench.ws_clients import Orchestrator, raise_nofile
from devtools import devstack

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = REPO_ROOT / "bench" / "out" / "ws"
AIM_P99_SECONDS = 1.0  # the admission push, from the tick's start, at 10,000 connections


# --- the orchestrator ---------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python bench/ws_bench.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--connections", type=int, default=10_000, help="WebSockets (customers)")
    p.add_argument("--batch", type=int, default=1_000, help="customers admitted per tick")
    p.add_argument("--ticks", type=int, help="admission ticks (default: until all admitted)")
    p.add_argument("--client-procs", type=int, default=1, help="client processes (default 1)")
    p.add_argument("--connect-concurrency", type=int, default=100, help="handshakes in flight")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds before a message is lost")
    p.add_argument("--pause", type=float, default=1.0, help="seconds between ticks")
    p.add_argument("--keep", action="store_true", help="keep the event and customers")
    return p.parse_args(argv)


def services() -> tuple[Any, dict[str, str]]:
    """PostgreSQL and Redis: the environment's, else embedded (throwaway)."""
    stack = devstack.Stack()
    base = Path(tempfile.mkdtemp(prefix="fairqueue-wsbench-"))
    stack.temp_dirs.append(base)
    base.chmod(0o711)  # the PostgreSQL system user must reach base/pg
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        env = stack.start(base, devstack.SignalWatch(), throwaway=True)
    finally:
        for sig, handler in saved.items():  # Ctrl-C still stops the benchmark
            signal.signal(sig, handler)
    return stack, env


def start_daphne(env: dict[str, str]) -> tuple[subprocess.Popen, int]:
    port = devstack.free_port()
    env = {**env, "WS_PORT": str(port), "PORT": "0", "SANDBOX_PORT": "0"}
    argv = next(p.argv for p in devstack.app_processes(env) if p.name == "ws")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    with (OUT_DIR / "daphne.log").open("wb") as log:
        proc = devstack.spawn(argv, env=env, stdout=log)
    deadline = time.monotonic() + 60
    while not healthz_ok(f"http://127.0.0.1:{port}"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"daphne did not start; see {OUT_DIR / 'daphne.log'}")
        time.sleep(0.2)
    return proc, port


def daphne_stats(pid: int) -> dict[str, float]:
    from bench.http_load import cpu_snapshot

    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    kb = {line.split(":")[0]: int(line.split()[1]) for line in status if line.startswith("Vm")}
    return {
        "rss_mb": kb.get("VmRSS", 0) / 1024,
        "peak_rss_mb": kb.get("VmHWM", 0) / 1024,
        "cpu_s": cpu_snapshot(pid)["server"],
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
    }


def seed(connections: int, batch: int) -> tuple[uuid.UUID, list[tuple[str, str]]]:
    """An ACTIVE event with a ticket per customer, the customers WAITING in
    Postgres (one statement) and in Redis (the rebuild); their tokens, in
    line order."""
    from django.db import connection

    from bench.queue_bench import rebuild
    from bench.queue_setup import make_event, seed_waiting, tokens_for
    from customers.models import Customer
    from queueing.models import QueueEntry

    event_id = make_event("WebSocket bench", tickets=connections, batch=batch)
    seed_waiting(event_id, f"ws-{uuid.uuid4().hex[:8]}", connections)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT c.id::text, c.email FROM {QueueEntry._meta.db_table} q "  # noqa: S608
            f"JOIN {Customer._meta.db_table} c ON c.id = q.customer_id "
            "WHERE q.event_id = %s ORDER BY q.score",
            [event_id],
        )
        customers = cursor.fetchall()
    rebuild(event_id)
    return event_id, list(zip((c for c, _ in customers), tokens_for(customers), strict=True))


def admitted_so_far(event_id: uuid.UUID) -> set[str]:
    from queueing.models import QueueEntry

    rows = QueueEntry.objects.filter(event_id=event_id, admitted_at__isnull=False)
    return {str(c) for c in rows.values_list("customer_id", flat=True)}


def ms(values: list[float], *qs: int) -> str:
    values = sorted(values)
    if not values:
        return "n/a"
    parts = [f"p{q} {percentile(values, q) * 1000:.0f}" for q in qs]
    return ", ".join(parts) + f", max {values[-1] * 1000:.0f} ms (n={len(values):,})"


def run_ticks(
    args: argparse.Namespace,
    event_id: uuid.UUID,
    orch: Orchestrator,
    pid: int,
    order: list[str],
) -> list[dict[str, Any]]:
    """``order``: the customers in line order (by score)."""
    from queueing.services import admission_tick_event

    ticks, seen = [], set()
    cumulative = [0] * args.client_procs
    frames_before = 0
    total = args.ticks or math.ceil(args.connections / args.batch)
    for k in range(total):
        cpu = daphne_stats(pid)["cpu_s"]
        started = time.monotonic()
        report = admission_tick_event(event_id=event_id)
        returned = time.monotonic()
        if report.skipped or report.served is None:
            raise SystemExit(f"tick {k + 1} did not run: {report}")
        now_admitted = admitted_so_far(event_id)
        new = now_admitted - seen
        seen = now_admitted
        for customer in new:
            cumulative[orch.part[customer]] += 1
        deadline = started + args.timeout
        near = set(order[report.served : report.served + len(new)])
        near_per = [0] * args.client_procs
        for customer in near:
            near_per[orch.part[customer]] += 1
        answers = orch.ask(
            [("tick", report.served, n, near_per[i], deadline) for i, n in enumerate(cumulative)]
        )
        waited = time.monotonic() - started
        frames_now = sum(a["frames"] for a in answers)
        frames, frames_before = frames_now - frames_before, frames_now
        bound = 2 * len(new) + args.connections / 6
        tick = {
            "k": k + 1,
            "started": started,
            "seconds": returned - started,
            "served": report.served,
            "admitted": new,
            "near": near,
            "frames": frames,
            "bound": bound,
            "timings_ms": report.timings_ms,
            "daphne_cpu_s": daphne_stats(pid)["cpu_s"] - cpu,
            "all_in_s": waited,
        }
        ticks.append(tick)
        print(
            f"  tick {k + 1}: admitted {len(new):,} (served {report.served:,}) in "
            f"{tick['seconds'] * 1000:.0f} ms; news and next batch in after {waited:.2f} s; "
            f"frames {frames:,} (bound {bound:,.0f}), "
            f"line {sum(a['broadcasts'] for a in answers):,}, "
            f"daphne CPU {tick['daphne_cpu_s']:.2f} s",
            flush=True,
        )
        if report.admitted == 0:
            break
        time.sleep(args.pause)
    return ticks


def summarise(ticks: list[dict], records: list[dict], timeout: float) -> dict[str, Any]:
    """Per tick (stored in it) and over all ticks: the latencies, from the
    tick's start, of the admitted pushes and of the line state to the next
    batch; and the messages lost (every admitted customer must get their
    push, every socket of the next batch the line state)."""
    sockets: dict[str, tuple] = {}
    for r in records:
        sockets.update(r["sockets"])
    lost: Counter = Counter()
    for tick in ticks:
        start, served, new, near = tick["started"], tick["served"], tick["admitted"], tick["near"]
        tick["admitted_s"], tick["broadcast_s"] = [], []
        for customer in near:
            opened, _admitted_at, served_at, _closed = sockets[customer]
            got = served_at.get(served)
            if not opened or got is None or got - start > timeout:
                lost["line state to the next batch"] += 1
            else:
                tick["broadcast_s"].append(got - start)
        for customer in new:
            opened, admitted_at, _served_at, _closed = sockets[customer]
            if not opened or admitted_at is None or admitted_at - start > timeout:
                lost["admitted push"] += 1
            else:
                tick["admitted_s"].append(admitted_at - start)
        if tick["frames"] > tick["bound"]:
            lost["ticks over the frame bound"] += 1
    return {
        "admitted": [x for t in ticks for x in t["admitted_s"]],
        "broadcast": [x for t in ticks for x in t["broadcast_s"]],
        "lost": lost,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    nofile = raise_nofile()
    if nofile < args.connections + 200:
        raise SystemExit(f"RLIMIT_NOFILE is {nofile}: too low for {args.connections} sockets")
    stack, env = services()
    daphne = orch = None
    event_id = None
    run_started = time.monotonic()
    try:
        env.update(BENCH_STACK_ENV)
        production_env(env)
        os.environ.update(env)  # this process mints the tokens and runs the ticks
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        from bench.queue_setup import django_setup

        django_setup()
        daphne, port = start_daphne(env)
        print(f"daphne pid {daphne.pid} on port {port} (log: {OUT_DIR / 'daphne.log'})")
        t = time.monotonic()
        event_id, customers = seed(args.connections, args.batch)
        print(f"event {event_id}: {len(customers):,} WAITING ({time.monotonic() - t:.1f} s)")

        t = time.monotonic()
        url = f"ws://127.0.0.1:{port}/ws/events/{event_id}/queue/"
        orch = Orchestrator(args, url, customers)
        summaries = orch.connected()
        connect_s = time.monotonic() - t
        opened = sum(s["opened"] for s in summaries)
        first = sum(s["first"] for s in summaries)
        handshakes = [x for s in summaries for x in s["handshake"]]
        firsts = [x for s in summaries for x in s["first_message"]]
        after_connect = daphne_stats(daphne.pid)
        print(
            f"connected {opened:,}/{args.connections:,} in {connect_s:.1f} s, "
            f"{first:,} with their snapshot; daphne RSS {after_connect['rss_mb']:.0f} MB, "
            f"CPU {after_connect['cpu_s']:.1f} s, {after_connect['fds']:,} fds",
            flush=True,
        )
        ticks = run_ticks(args, event_id, orch, daphne.pid, [c for c, _ in customers])
        held = daphne_stats(daphne.pid)
        records = orch.ask(("finish",))
        result = summarise(ticks, records, args.timeout)
        counts = Counter()
        for r in [*summaries, *records]:
            counts.update(r["counts"])
        still_open = sum(
            1 for r in records for ok, *_, closed in r["sockets"].values() if ok and closed is None
        )
        lost = sum(result["lost"].values())
        tick_ms = [t["seconds"] for t in ticks]
        print(f"\nresults ({args.connections:,} connections, batch {args.batch:,}, one daphne)")
        print(f"  connections held        {still_open:,} (daphne has {held['fds']:,} fds open)")
        print(f"  connect (handshake)     {ms(handshakes, 50, 99)}")
        print(f"  connect to snapshot     {ms(firsts, 50, 99)}")
        print(f"  tick call (to pushes)   {ms(tick_ms, 50)}; ticks {len(ticks)}")
        p99 = percentile(sorted(result["admitted"]), 99)
        aim = "met" if p99 <= AIM_P99_SECONDS else "NOT met"
        print(f"  admitted push latency   {ms(result['admitted'], 50, 95, 99)}")
        print(f"    aim p99 <= {AIM_P99_SECONDS:g} s        {aim}")
        print(f"  line to the next batch  {ms(result['broadcast'], 50, 99)}")
        frames = [t["frames"] for t in ticks]
        print(
            f"  frames per tick         max {max(frames):,}, mean {sum(frames) / len(frames):,.0f} "
            f"(bound 2 x admitted + sockets / 6 = {ticks[0]['bound']:,.0f})"
        )
        print(f"  messages lost           {lost:,} {dict(result['lost']) or ''}")
        for t in ticks:
            print(
                f"    tick {t['k']:>2}: admitted {ms(t['admitted_s'], 50, 99)}; "
                f"broadcast {ms(t['broadcast_s'], 50, 99)}"
            )
        print(f"  client events           {dict(counts) or 'none'}")
        print(
            f"  daphne                  RSS {held['rss_mb']:.0f} MB (peak "
            f"{held['peak_rss_mb']:.0f} MB), CPU {held['cpu_s']:.1f} s "
            f"({after_connect['cpu_s']:.1f} s to connect, "
            f"{sum(t['daphne_cpu_s'] for t in ticks):.1f} s in ticks)"
        )
        print(f"  client CPU              {sum(r['cpu_seconds'] for r in records):.1f} s")
        print(f"  run time                {time.monotonic() - run_started:.0f} s")
        figures = {
            "args": vars(args),
            "held": still_open,
            "handshake_s": sorted(handshakes),
            "snapshot_s": sorted(firsts),
            "admitted_s": sorted(result["admitted"]),
            "broadcast_s": sorted(result["broadcast"]),
            "lost": dict(result["lost"]),
            "client_events": dict(counts),
            "ticks": [
                {**t, "admitted": sorted(t["admitted"]), "near": sorted(t["near"])} for t in ticks
            ],
            "daphne": {"after_connect": after_connect, "end": held},
        }
        stamp = time.strftime("%Y%m%d-%H%M%S")
        (OUT_DIR / f"ws-bench-{args.connections}-{stamp}.json").write_text(json.dumps(figures))
        errors = sum(n for key, n in counts.items() if key.startswith("error:"))
        failed = opened < args.connections or first < opened or errors
        return 1 if lost or failed else 0
    finally:
        if orch is not None:
            orch.stop()
        if daphne is not None:
            devstack.stop_groups([daphne])
        own_postgres = any(s.env_var == "DATABASE_URL" for s in stack.servers)
        if event_id is not None and not args.keep and not own_postgres:
            from bench.queue_setup import cleanup

            cleanup([event_id])
        stack.close()


if __name__ == "__main__":
    sys.exit(main())
