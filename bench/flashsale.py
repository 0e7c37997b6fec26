"""Flash-sale load generator: N customers race for a few thousand tickets.

    python bench/flashsale.py --launch-stack                      # 50,000 customers, 5,000 tickets
    python bench/flashsale.py --launch-stack --customers 500 --tickets 100 --ws-customers 100
    python bench/flashsale.py --launch-stack --fault redis-flush --fault-at 0.3
    DATABASE_URL=... REDIS_URL=... python bench/flashsale.py --url http://127.0.0.1:8000 \\
        --ws-url ws://127.0.0.1:8001 --sandbox-url http://127.0.0.1:8002

``--launch-stack`` starts the same processes as ``make run`` (see bench/stack.py)
on free ports, with an embedded PostgreSQL unless DATABASE_URL is set, and a
Redis of its own; every fault scenario works there. Against a stack started
elsewhere, DATABASE_URL (and REDIS_URL for the Redis faults and checks) must
point at the services that stack uses: the event and customers are made with
``manage.py create_event`` / ``mint_customer_tokens``, and the invariant
check reads Postgres directly.

It prints progress while it runs and, at the end, per-endpoint throughput and
latency, errors by code, time to sell out, admission push latency, fault heal
times and the invariant check; exit status 1 if any invariant fails. Results
(JSON) and a plot (PNG) go to bench/out/.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import resource
import signal
import sys
import time
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import psycopg

from bench import invariants, report
from bench._common import Api, Recorder, percentile
from bench.customers import BEHAVIOURS, Customer, Sale, SaleConfig
from bench.faults import FAULTS, NEEDS_REDIS, NEEDS_STACK, FaultContext, run_fault
from bench.stack import manage

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = REPO_ROOT / "bench" / "out"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python bench/flashsale.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = p.add_argument_group("where")
    where.add_argument("--launch-stack", action="store_true", help="start the whole system here")
    where.add_argument("--url", default="http://127.0.0.1:8000", help="HTTP API base")
    where.add_argument("--ws-url", default="ws://127.0.0.1:8001", help="WebSocket base")
    where.add_argument("--sandbox-url", default="http://127.0.0.1:8002", help="sandbox gateway")
    where.add_argument("--database-url", default=os.environ.get("DATABASE_URL"))
    where.add_argument("--redis-url", default=os.environ.get("REDIS_URL"))
    where.add_argument(
        "--web-workers", type=int, default=2, help="gunicorn workers (--launch-stack)"
    )
    where.add_argument(
        "--stack-env", action="append", default=[], metavar="KEY=VALUE", help="extra stack settings"
    )
    sale = p.add_argument_group("sale")
    sale.add_argument("--customers", type=int, default=50_000)
    sale.add_argument("--tickets", type=int, default=5_000, help="one tier of this many tickets")
    sale.add_argument(
        "--tier",
        action="append",
        default=[],
        metavar="NAME:PRICE:INVENTORY",
        help="instead of --tickets",
    )
    sale.add_argument("--batch-size", type=int, default=500, help="admission batch per tick")
    sale.add_argument(
        "--window-seconds", type=int, default=300, help="admission window (product default)"
    )
    sale.add_argument(
        "--ws-customers", type=int, default=5_000, help="customers holding a WebSocket"
    )
    sale.add_argument("--join-seconds", type=float, default=5.0, help="arrivals spread over this")
    sale.add_argument("--concurrency", type=int, default=200, help="joins in flight at most")
    sale.add_argument(
        "--poll-concurrency", type=int, default=100, help="position polls in flight at most"
    )
    sale.add_argument(
        "--purchase-concurrency",
        type=int,
        default=100,
        help="claims and payments in flight at most. Each kind has its own connections,"
        " as a real server's bounded accept queue: a claim waits behind the requests"
        " in flight, not behind every join still to be sent",
    )
    sale.add_argument(
        "--poll-min", type=float, default=10.0, help="shortest position poll interval (s)"
    )
    sale.add_argument(
        "--poll-max", type=float, default=300.0, help="longest position poll interval (s)"
    )
    shares = {
        "abandon_queue": (0.05, "leave the queue while waiting"),
        "lapse_admission": (0.02, "are admitted and never claim"),
        "expire_claim": (0.03, "claim and never pay (the claim expires)"),
        "decline": (0.02, "decline the payment at the gateway"),
        "abandon_payment": (0.01, "start a payment and never finish it"),
    }
    for behaviour in BEHAVIOURS:
        default, what = shares[behaviour]
        sale.add_argument(
            f"--{behaviour.replace('_', '-')}",
            type=float,
            default=default,
            metavar="SHARE",
            help=f"share of customers who {what} (default {default})",
        )
    sale.add_argument(
        "--max-seconds", type=float, default=1800.0, help="give up the sale after this"
    )
    sale.add_argument("--settle-seconds", type=float, default=300.0, help="wait for reconciliation")
    sale.add_argument("--seed", type=int, default=1)
    faults = p.add_argument_group("faults")
    faults.add_argument("--fault", action="append", default=[], choices=FAULTS)
    faults.add_argument(
        "--fault-at", type=float, default=0.3, help="share of tickets held when injected"
    )
    faults.add_argument("--heal-timeout", type=float, default=300.0)
    out = p.add_argument_group("output")
    out.add_argument("--out", type=Path, default=OUT_DIR)
    out.add_argument("--name", default="", help="name of this run (file names)")
    out.add_argument("--plot-copy", type=Path, help="also write the plot here (e.g. docs/img/...)")
    out.add_argument("--progress", type=float, default=2.0, help="seconds between progress lines")
    args = p.parse_args(argv)
    missing = [f for f in args.fault if f in NEEDS_STACK and not args.launch_stack]
    if missing:
        p.error(
            f"{', '.join(missing)} needs --launch-stack (see bench/faults.py for the manual way)"
        )
    if not args.launch_stack and not args.database_url:
        p.error("DATABASE_URL (or --database-url) is needed without --launch-stack")
    if any(f in NEEDS_REDIS for f in args.fault) and not (args.launch_stack or args.redis_url):
        p.error("the Redis faults need REDIS_URL (or --launch-stack)")
    return args


# --- setup -----------------------------------------------------------------------------


def setup_sale(args: argparse.Namespace, env: dict[str, str]) -> tuple[dict, list[tuple[str, str]]]:
    tiers = args.tier or [f"Regular:500000:{args.tickets}"]
    name = f"Flash sale {datetime.now():%Y-%m-%d %H:%M:%S} {random.randint(0, 10**6)}"
    cmd = ["create_event", "--name", name, "--activate", "--batch-size", str(args.batch_size)]
    cmd += [
        "--window-seconds",
        str(args.window_seconds),
        "--max-active-admitted",
        str(sum(int(t.rsplit(":", 1)[1]) for t in tiers)),
    ]
    for tier in tiers:
        cmd += ["--tier", tier]
    event = json.loads(manage(env, *cmd).strip().splitlines()[-1])
    tokens_file = args.out / "tokens.txt"
    manage(
        env, "mint_customer_tokens", "--count", str(args.customers), "--output", str(tokens_file)
    )
    customers = [
        tuple(line.split()) for line in tokens_file.read_text().splitlines() if line.strip()
    ]
    return event, customers  # type: ignore[return-value]


# --- the sale ----------------------------------------------------------------------------


class Monitor:
    """Samples Postgres (and process memory) once a second; notices sell-out."""

    def __init__(
        self,
        conn: psycopg.AsyncConnection,
        event_id: str,
        inventory: int,
        rec: Recorder,
        stack: Any,
    ):
        self.conn, self.event_id, self.inventory, self.rec, self.stack = (
            conn,
            event_id,
            inventory,
            rec,
            stack,
        )
        self.timeline: list[dict[str, Any]] = []
        self.sold_out = asyncio.Event()
        self.held_threshold: dict[float, asyncio.Event] = {}
        self.marks: dict[str, float] = {}
        self.peak_rss: dict[str, float] = {}

    def trigger_at(self, share: float) -> asyncio.Event:
        return self.held_threshold.setdefault(share, asyncio.Event())

    async def sample(self) -> dict[str, Any]:
        async with self.conn.cursor() as cur:
            await cur.execute(
                """
                SELECT
                  (SELECT COUNT(*) FROM queueing_queueentry
                     WHERE event_id = %(e)s AND status = 'WAITING'),
                  (SELECT COUNT(*) FROM queueing_queueentry
                     WHERE event_id = %(e)s AND status = 'ADMITTED'),
                  (SELECT COUNT(*) FROM events_ticket k JOIN events_tickettier t ON t.id = k.tier_id
                     WHERE t.event_id = %(e)s AND k.claim_id IS NOT NULL),
                  (SELECT COALESCE(SUM(quantity), 0) FROM claims_claim
                     WHERE event_id = %(e)s AND status = 'CONFIRMED')
                """,
                {"e": self.event_id},
            )
            waiting, admitted, held, sold = await cur.fetchone()
        return {"waiting": waiting, "admitted": admitted, "held": held, "sold": int(sold)}

    async def run(self, sale: Sale) -> None:
        from bench.stack import rss_mb

        while True:
            try:
                point = await self.sample()
            except psycopg.Error as exc:
                print(f"monitor: {exc}", file=sys.stderr)
                await asyncio.sleep(1)
                continue
            point.update(
                t=round(self.rec.now(), 2), ws_open=sale.ws_open, requests=self.rec.total_requests()
            )
            if self.stack is not None:
                for name, child in self.stack.children.items():
                    if child.proc is not None:
                        pids = [child.proc.pid, *self._descendants(child.proc.pid)]
                        point[f"rss_{name}"] = round(sum(rss_mb(p) for p in pids), 1)
                if self.stack.redis_proc is not None:
                    point["rss_redis"] = round(rss_mb(self.stack.redis_proc.pid), 1)
                for key, value in point.items():
                    if key.startswith("rss_"):
                        self.peak_rss[key[4:]] = max(self.peak_rss.get(key[4:], 0.0), value)
            self.timeline.append(point)
            for share, event in self.held_threshold.items():
                if point["held"] >= share * self.inventory:
                    event.set()
            if point["held"] >= self.inventory and "all held" not in self.marks:
                self.marks["all held"] = point["t"]
            if point["sold"] >= self.inventory and not self.sold_out.is_set():
                self.marks["sold out"] = point["t"]
                self.sold_out.set()
            await asyncio.sleep(1.0)

    @staticmethod
    def _descendants(pid: int) -> list[int]:
        from bench.stack import children_of

        out, todo = [], [pid]
        while todo:
            kids = children_of(todo.pop())
            out += kids
            todo += kids
        return out


async def progress(
    rec: Recorder, sale: Sale, monitor: Monitor, total: int, every: float, phase: list[str]
):
    last_n, last_t = 0, rec.now()
    while True:
        await asyncio.sleep(every)
        now, n = rec.now(), rec.total_requests()
        rate = (n - last_n) / max(now - last_t, 1e-6)
        last_n, last_t = n, now
        p = (
            monitor.timeline[-1]
            if monitor.timeline
            else {"waiting": 0, "admitted": 0, "held": 0, "sold": 0}
        )
        errors = sum(rec.errors.values())
        print(
            f"[{now:7.1f}s] {phase[0]:<8} joined {sale.counts['joined']:,}/{total:,} "
            f"waiting {p['waiting']:,} admitted {p['admitted']:,} held {p['held']:,} "
            f"sold {p['sold']:,}/{monitor.inventory:,} | ws {sale.ws_open:,} | {rate:,.0f} req/s | "
            f"errors {errors:,}",
            flush=True,
        )


def _on_interrupt(loop: asyncio.AbstractEventLoop, interrupted: asyncio.Event) -> None:
    print("\ninterrupted: ending the sale now (Ctrl-C again to stop at once)", flush=True)
    interrupted.set()
    loop.remove_signal_handler(signal.SIGINT)


async def confirm_times(
    conn: psycopg.AsyncConnection, pairs: list[tuple[str, float]]
) -> list[float]:
    """Seconds from the customer paying at the gateway to the claim being
    CONFIRMED in Postgres (webhook delivery and processing)."""
    if not pairs:
        return []
    async with conn.cursor() as cur:
        await cur.execute(
            "SELECT id::text, EXTRACT(EPOCH FROM confirmed_at) FROM claims_claim "
            "WHERE id = ANY(%s::uuid[]) AND confirmed_at IS NOT NULL",
            [[claim for claim, _ in pairs]],
        )
        confirmed = {row[0]: float(row[1]) for row in await cur.fetchall()}
    return [confirmed[c] - wall for c, wall in pairs if c in confirmed]


async def entry_times(conn: psycopg.AsyncConnection, pairs: list[tuple[str, float]]) -> list[float]:
    """Seconds from each entry's admission (tick time in Postgres) to the
    client learning of it (wall clock when the push or poll answer arrived)."""
    if not pairs:
        return []
    async with conn.cursor() as cur:
        await cur.execute(
            "SELECT id::text, EXTRACT(EPOCH FROM admitted_at) FROM queueing_queueentry "
            "WHERE id = ANY(%s::uuid[])",
            [[entry for entry, _ in pairs]],
        )
        admitted = {row[0]: float(row[1]) for row in await cur.fetchall() if row[1] is not None}
    return [wall - admitted[e] for e, wall in pairs if e in admitted]


async def run_sale(
    args: argparse.Namespace, event: dict, customers: list[tuple[str, str]], urls: dict, stack: Any
):
    rec = Recorder()
    inventory = sum(t["inventory"] for t in event["tiers"])
    rng = random.Random(args.seed)
    ws_set = set(rng.sample(range(len(customers)), min(args.ws_customers, len(customers))))
    shares = [getattr(args, b) for b in BEHAVIOURS]
    people = []
    for i, (cid, token) in enumerate(customers):
        draw, behaviour = rng.random(), "pay"
        for name, share in zip(BEHAVIOURS, shares, strict=True):
            if draw < share:
                behaviour = name
                break
            draw -= share
        people.append(Customer(index=i, id=cid, token=token, ws=i in ws_set, behaviour=behaviour))
    stack_env = stack.env if stack is not None else os.environ
    cfg = SaleConfig(
        event_id=event["event_id"],
        tiers=event["tiers"],
        http_url=urls["http"],
        ws_url=urls["ws"],
        sandbox_url=urls["sandbox"],
        join_seconds=args.join_seconds,
        poll_min=args.poll_min,
        poll_max=args.poll_max,
        claim_ttl=float(stack_env.get("CLAIM_TTL_SECONDS", 600)),
        window_seconds=args.window_seconds,
        seed=args.seed,
    )
    connector = aiohttp.TCPConnector(
        limit=args.concurrency + args.poll_concurrency + 2 * args.purchase_concurrency,
        ttl_dns_cache=None,
    )
    ws_connector = aiohttp.TCPConnector(limit=0)
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        aiohttp.ClientSession(connector=ws_connector) as ws_session,
        await psycopg.AsyncConnection.connect(args.database_url, autocommit=True) as mon_conn,
        await psycopg.AsyncConnection.connect(args.database_url, autocommit=True) as fault_conn,
    ):
        api = Api(session, urls["http"], rec, concurrency=args.concurrency)
        watch = Api(session, urls["http"], rec, concurrency=args.poll_concurrency)
        buy = Api(session, urls["http"], rec, concurrency=args.purchase_concurrency)
        sandbox = Api(session, urls["sandbox"], rec, concurrency=args.purchase_concurrency)
        sale = Sale(cfg, api, watch, buy, sandbox, ws_session, rec)
        monitor = Monitor(mon_conn, event["event_id"], inventory, rec, stack)
        phase = ["selling"]

        async def query(sql: str, params: list[Any]) -> list[tuple]:
            async with fault_conn.cursor() as cur:
                await cur.execute(sql, params)
                return await cur.fetchall()

        redis_client = None
        if args.redis_url:
            import redis

            redis_client = redis.Redis.from_url(
                args.redis_url, decode_responses=True, socket_timeout=2
            )
        ctx = FaultContext(
            sale=sale,
            event_id=event["event_id"],
            tier_ids=[t["id"] for t in event["tiers"]],
            http_url=urls["http"],
            sandbox_url=urls["sandbox"],
            now=rec.now,
            query=query,
            sold_out=monitor.sold_out,
            redis=redis_client,
            stack=stack,
            paystack_secret=stack_env.get("PAYSTACK_SECRET_KEY", "sk_test_fairqueue_sandbox"),
            claim_ttl=cfg.claim_ttl,
            expiry_interval=float(stack_env.get("EXPIRY_INTERVAL_SECONDS", 30)),
            heal_timeout=args.heal_timeout,
        )
        background = [
            asyncio.create_task(monitor.run(sale)),
            asyncio.create_task(progress(rec, sale, monitor, len(people), args.progress, phase)),
        ]
        fault_tasks = [
            asyncio.create_task(run_fault(name, ctx, monitor.trigger_at(args.fault_at)))
            for name in args.fault
        ]
        tasks = [asyncio.create_task(sale.customer(c)) for c in people]
        everyone = asyncio.gather(*tasks, return_exceptions=True)
        # Ctrl-C ends the sale early (then settle, check, report); twice stops.
        interrupted = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, _on_interrupt, loop, interrupted)
        done_first = asyncio.create_task(monitor.sold_out.wait())
        stop_early = asyncio.create_task(interrupted.wait())
        await asyncio.wait(
            {done_first, stop_early, everyone},
            timeout=args.max_seconds,
            return_when=asyncio.FIRST_COMPLETED,
        )
        stop_early.cancel()
        ended_at = rec.now()
        phase[0] = "stopping"
        sale.stopping.set()
        for task in tasks:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await everyone
        done_first.cancel()
        phase[0] = "healing"
        fault_reports = []
        if fault_tasks:
            done, pending = await asyncio.wait(fault_tasks, timeout=args.heal_timeout + 60)
            for task in pending:
                task.cancel()
            fault_reports = [t.result() for t in done]
        push = await entry_times(mon_conn, sale.push_latency_wall)
        confirmed = await confirm_times(mon_conn, sale.paid_wall)
        polled = await entry_times(mon_conn, sale.poll_latency_wall)
        for task in background:
            task.cancel()
        for task in background:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    return {
        "rec": rec,
        "sale": sale,
        "monitor": monitor,
        "faults": fault_reports,
        "ended_at": ended_at,
        "push_latency": push,
        "poll_latency": polled,
        "confirm_latency": confirmed,
        "inventory": inventory,
        "redis": redis_client,
    }


# --- after the sale ----------------------------------------------------------------------


def settle_and_check(
    args: argparse.Namespace, event_id: str, redis_client: Any, env: dict
) -> tuple[list, dict, float]:
    admission_interval = float(env.get("ADMISSION_INTERVAL_SECONDS", 5))
    reconcile_interval = float(env.get("RECONCILE_INTERVAL_SECONDS", 30))
    with psycopg.connect(args.database_url, autocommit=True) as conn, conn.cursor() as cur:
        settle = invariants.wait_until(
            lambda: invariants.settled(cur, event_id), timeout=args.settle_seconds
        )
        if redis_client is not None:
            invariants.wait_until(
                lambda: _redis_ok(cur, redis_client, event_id), timeout=2 * reconcile_interval + 10
            )
        checks = invariants.check_all(
            cur,
            event_id,
            admitted_grace_seconds=2 * admission_interval,
            redis_client=redis_client,
        )
        counts = invariants.status_counts(cur, event_id)
    return checks, counts, settle


def _redis_ok(cur: Any, redis_client: Any, event_id: str) -> bool:
    try:
        return invariants.redis_matches_postgres(cur, redis_client, event_id).ok
    except Exception:  # Redis not back yet
        return False


def print_results(
    args: argparse.Namespace, result: dict, checks: list, counts: dict, settle: float, env: dict
) -> dict:
    rec, sale, monitor = result["rec"], result["sale"], result["monitor"]
    summary = rec.summary()
    print("\n=== flash sale results ===")
    print(
        f"customers {args.customers:,} (WebSocket {min(args.ws_customers, args.customers):,}), "
        f"tickets {result['inventory']:,}, batch {args.batch_size}, "
        f"window {args.window_seconds} s, "
        f"in flight: {args.concurrency} joins, {args.poll_concurrency} polls, "
        f"{args.purchase_concurrency} purchase requests"
    )
    settings = {
        k: env[k]
        for k in sorted(env)
        if k.endswith(("_SECONDS", "WEB_CONCURRENCY")) or k == "DJANGO_DEBUG"
    }
    if settings:
        print("stack settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()))
    print("\nper endpoint (whole run):")
    print(report.endpoint_table(summary))
    print("\nerrors by endpoint, status and code:")
    print(report.error_table(rec))
    marks = monitor.marks
    print("\ntimes (seconds since the first customer arrived):")
    joins = rec.samples.get("join", [])
    if joins:
        print(f"  all joins answered      {max(s.t + s.latency for s in joins):8.1f}")
    for label in ("all held", "sold out"):
        print(
            f"  {label:<23} {marks[label]:8.1f}"
            if label in marks
            else f"  {label:<23}      not reached"
        )
    print(f"  sale stopped            {result['ended_at']:8.1f}")
    print(
        f"  reconciliation settled  {settle:8.1f} s after the stop"
        if settle >= 0
        else "  NOT settled"
    )
    print("\nadmission to client (admitted_at of the tick -> client received):")
    print(f"  WebSocket push   {report.latency_line(result['push_latency'])}")
    print(f"  position poll    {report.latency_line(result['poll_latency'])}")
    print(
        "  pay at gateway -> claim CONFIRMED in Postgres "
        + report.latency_line(result["confirm_latency"])
    )
    print(
        f"  pay at gateway -> client sees CONFIRMED     {report.latency_line(sale.confirm_latency)}"
    )
    print(f"\nWebSocket messages received: {dict(sale.ws_messages)}")
    via = {k: v for k, v in sale.counts.items() if k.startswith("admitted_via_")}
    print(f"admission learnt by: {via}")
    outcomes = {k.split(":", 1)[1]: v for k, v in sale.counts.items() if k.startswith("outcome:")}
    print(f"customer outcomes: {dict(sorted(outcomes.items(), key=lambda kv: -kv[1]))}")
    print(f"status counts: {counts}")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    client_cpu = usage.ru_utime + usage.ru_stime
    print(
        f"load generator CPU: {client_cpu:.0f} s over {result['ended_at']:.0f} s of sale "
        f"({client_cpu / max(result['ended_at'], 1):.2f} cores on average), "
        f"peak RSS {usage.ru_maxrss / 1024:.0f} MB"
    )
    if monitor.peak_rss:
        print(
            "peak RSS MB: " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(monitor.peak_rss.items()))
        )
    for fault in result["faults"]:
        heal = fault.heal_seconds
        print(
            f"\nfault {fault.name}: injected at {fault.injected_at:.1f} s, "
            f"ended {fault.ended_at:.1f} s, "
            f"healed {'NOT' if heal is None else f'{heal:.1f} s'} after (components {fault.heal})"
        )
        for note in fault.notes:
            print(f"  - {note}")
    print("\ninvariants:")
    for check in checks:
        print(check.line())
    ok = all(c.ok for c in checks)
    print(f"\nRESULT: {'all invariants hold' if ok else 'INVARIANT FAILED'}")
    return {
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "stack_settings": settings,
        "endpoints": summary,
        "errors": [
            {"endpoint": e, "status": s, "code": c, "count": n}
            for (e, s, c), n in rec.errors.items()
        ],
        "marks": marks,
        "ended_at": result["ended_at"],
        "settle_seconds": settle,
        "push_latency_ms": _pcts(result["push_latency"]),
        "poll_latency_ms": _pcts(result["poll_latency"]),
        "confirm_latency_ms": _pcts(result["confirm_latency"]),
        "confirm_seen_latency_ms": _pcts(sale.confirm_latency),
        "ws_messages": dict(sale.ws_messages),
        "outcomes": outcomes,
        "status_counts": counts,
        "peak_rss_mb": monitor.peak_rss,
        "client_cpu_seconds": client_cpu,
        "faults": [
            {
                "name": f.name,
                "injected_at": f.injected_at,
                "ended_at": f.ended_at,
                "heal": f.heal,
                "heal_seconds": f.heal_seconds,
                "notes": f.notes,
            }
            for f in result["faults"]
        ],
        "invariants": [asdict(c) for c in checks],
        "ok": ok,
    }


def _pcts(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    v = sorted(values)
    return {
        "n": len(v),
        "p50": percentile(v, 50) * 1000,
        "p99": percentile(v, 99) * 1000,
        "max": v[-1] * 1000,
    }


def run(coroutine: Any) -> Any:
    """uvloop when installed: the load generator shares the machine with the
    system it measures, so its own CPU per request matters."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    return uvloop.run(coroutine)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    run_name = args.name or ("-".join(args.fault) if args.fault else "clean")
    stack = None
    try:
        if args.launch_stack:
            from bench.stack import LocalStack

            overrides = dict(kv.split("=", 1) for kv in args.stack_env)
            stack = LocalStack(
                args.out / "stack", env_overrides=overrides, web_workers=args.web_workers
            )
            print("starting the stack (logs in bench/out/stack/) ...", flush=True)
            stack.start()
            env = stack.env
            args.database_url, args.redis_url = env["DATABASE_URL"], env["REDIS_URL"]
            urls = {"http": stack.http_url, "ws": stack.ws_url, "sandbox": stack.sandbox_url}
        else:
            env = {**os.environ, "DATABASE_URL": args.database_url}
            if args.redis_url:
                env["REDIS_URL"] = args.redis_url
            urls = {
                "http": args.url.rstrip("/"),
                "ws": args.ws_url.rstrip("/"),
                "sandbox": args.sandbox_url.rstrip("/"),
            }
        started = time.monotonic()
        event, customers = setup_sale(args, env)
        print(
            f"event {event['event_id']} with "
            f"{sum(t['inventory'] for t in event['tiers']):,} tickets; "
            f"{len(customers):,} customer tokens ({time.monotonic() - started:.1f} s setup)",
            flush=True,
        )
        result = run(run_sale(args, event, customers, urls, stack))
        print("sale over; waiting for reconciliation to settle ...", flush=True)
        checks, counts, settle = settle_and_check(args, event["event_id"], result["redis"], env)
        data = print_results(args, result, checks, counts, settle, env)
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        (args.out / f"flashsale-{run_name}-{stamp}.json").write_text(
            json.dumps(data, indent=2, default=str)
        )
        png = args.out / f"flashsale-{run_name}.png"
        title = f"flash sale: {args.customers:,} customers, {result['inventory']:,} tickets" + (
            f", fault: {', '.join(args.fault)}" if args.fault else ""
        )
        report.plot(
            png,
            result["rec"],
            result["monitor"].timeline,
            result["faults"],
            title=title,
            marks=result["monitor"].marks,
        )
        if args.plot_copy:
            report.plot(
                args.plot_copy,
                result["rec"],
                result["monitor"].timeline,
                result["faults"],
                title=title,
                marks=result["monitor"].marks,
            )
        print(f"plot: {png}")
        return 0 if data["ok"] else 1
    finally:
        if stack is not None:
            stack.stop()


if __name__ == "__main__":
    sys.exit(main())
