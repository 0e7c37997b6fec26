"""The customer phase of a flash sale: every customer let loose on the stack,
a monitor sampling Postgres, progress lines, the faults injected on cue, and
the admission and confirmation latencies read back from Postgres after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import resource
import signal
import sys
import time
from typing import Any

import aiohttp
import psycopg

from bench._common import Api, Recorder
from bench.customers import BEHAVIOURS, Customer, Sale, SaleConfig
from bench.faults import FaultContext, run_fault, sandbox_config


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
        self.cpu_first: dict[str, float] = {}  # CPU seconds per stack part at the first sample
        self.cpu_last: dict[str, float] = {}

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

    def cpu_seconds(self) -> dict[str, float]:
        """CPU each part of the stack (and this load generator) spent between
        the first sample and the last."""
        return {
            name: round(self.cpu_last[name] - self.cpu_first.get(name, 0.0), 1)
            for name in self.cpu_last
        }

    async def run(self, sale: Sale) -> None:
        from bench.stack import process_tree_cpu, rss_mb

        while True:
            try:
                point = await self.sample()
            except psycopg.Error as exc:
                print(f"monitor: {exc}", file=sys.stderr)
                await asyncio.sleep(1)
                continue
            point.update(
                t=round(self.rec.now(), 2),
                ws_open=sale.ws_open,
                requests=self.rec.total_requests(),
                load=os.getloadavg()[0],
            )
            if self.stack is not None:
                for name, child in self.stack.children.items():
                    if child.proc is not None:
                        pids = [child.proc.pid, *self._descendants(child.proc.pid)]
                        point[f"rss_{name}"] = round(sum(rss_mb(p) for p in pids), 1)
                if self.stack.redis_proc is not None:
                    point["rss_redis"] = round(rss_mb(self.stack.redis_proc.pid), 1)
                usage = resource.getrusage(resource.RUSAGE_SELF)
                self.cpu_last = {
                    **process_tree_cpu(self.stack.cpu_roots()),
                    "load generator": usage.ru_utime + usage.ru_stime,
                }
                self.cpu_first = self.cpu_first or dict(self.cpu_last)
                point["cpu"] = round(sum(self.cpu_last.values()), 2)
                for key, value in point.items():
                    if key.startswith("rss_"):
                        self.peak_rss[key[4:]] = max(self.peak_rss.get(key[4:], 0.0), value)
            self.timeline.append(point)
            for share, event in self.held_threshold.items():
                if point["held"] >= share * self.inventory:
                    event.set()
            if point["held"] >= self.inventory and "all held" not in self.marks:
                self.marks["all held"] = point["t"]
            if point["sold"] >= 0.95 * self.inventory and "95% sold" not in self.marks:
                self.marks["95% sold"] = point["t"]
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


def arrivals(people: list[Customer], args: argparse.Namespace, rng: random.Random) -> None:
    """When each customer arrives. With a pre-queue (``--prequeue-seconds`` > 0),
    as real sales go: ``--prequeue-share`` of them are already there, arriving
    over the pre-queue before the sale opens (they are shuffled at the open),
    the rest over the first ``--after-open-seconds`` of the sale. Without one,
    everyone arrives over ``--join-seconds``. Those who leave the queue do so
    1 to 20 s after joining."""
    for c in people:
        c.leave_after = rng.uniform(1, 20)
    if args.prequeue_seconds <= 0:
        for c in people:
            c.arrive_at = rng.uniform(0, args.join_seconds)
        return
    early = round(len(people) * args.prequeue_share)
    for n, c in enumerate(rng.sample(people, len(people))):
        if n < early:
            c.arrive_at = rng.uniform(0, args.prequeue_seconds * 0.9)
        else:
            c.arrive_at = args.prequeue_seconds + rng.uniform(0, args.after_open_seconds)


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
    arrivals(people, args, rng)
    for c in [c for c in people if not c.ws][: args.trace]:
        c.trace = []
    stack_env = stack.env if stack is not None else os.environ
    sandbox_token = stack_env.get("SANDBOX_CONTROL_TOKEN", "")
    cfg = SaleConfig(
        event_id=event["event_id"],
        tiers=event["tiers"],
        http_url=urls["http"],
        ws_url=urls["ws"],
        sandbox_url=urls["sandbox"],
        join_seconds=args.join_seconds,
        edge_cache=not args.no_edge_cache,
        claim_ttl=float(stack_env.get("CLAIM_TTL_SECONDS", 600)),
        window_seconds=args.window_seconds,
        seed=args.seed,
    )
    connector = aiohttp.TCPConnector(
        limit=args.concurrency + args.poll_concurrency + 2 * args.purchase_concurrency + 2,
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
        sandbox = Api(
            session,
            urls["sandbox"],
            rec,
            concurrency=args.purchase_concurrency,
            headers={"X-Sandbox-Token": sandbox_token},
        )
        edge = Api(session, urls["http"], rec, concurrency=2)  # the cache's origin reads
        sale = Sale(cfg, api, watch, buy, sandbox, ws_session, rec, edge)
        monitor = Monitor(mon_conn, event["event_id"], inventory, rec, stack)
        if args.prequeue_seconds > 0:
            # The pre-queue is open; the sale opens this long after the first
            # arrivals (the event was made with a placeholder sale start).
            async with mon_conn.cursor() as cur:
                await cur.execute(
                    "UPDATE events_event SET sale_start = now() + make_interval(secs => %s) "
                    "WHERE id = %s",
                    [args.prequeue_seconds, event["event_id"]],
                )
            monitor.marks["sale start"] = rec.now() + args.prequeue_seconds
            cfg.sale_start_ms = (time.time() + args.prequeue_seconds) * 1000
        else:
            monitor.marks["sale start"] = rec.now()
        phase = ["selling"]

        async def query(sql: str, params: Any) -> list[tuple]:
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
            sandbox_token=sandbox_token,
            claim_ttl=cfg.claim_ttl,
            expiry_interval=float(stack_env.get("EXPIRY_INTERVAL_SECONDS", 30)),
            heal_timeout=args.heal_timeout,
            window_seconds=float(args.window_seconds),
            admission_interval=float(stack_env.get("ADMISSION_INTERVAL_SECONDS", 5)),
        )
        if args.gateway_latency > 0:
            await sandbox_config(ctx, latency_seconds=args.gateway_latency)
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
        async with mon_conn.cursor() as cur:
            await cur.execute(
                "SELECT EXTRACT(EPOCH FROM MIN(admitted_at)) FROM queueing_queueentry "
                "WHERE event_id = %s",
                [event["event_id"]],
            )
            (first_admitted,) = await cur.fetchone()
        # The beat's phase: when the first tick came after the sale's start.
        first_tick = None
        if first_admitted is not None and cfg.sale_start_ms:
            first_tick = float(first_admitted) - cfg.sale_start_ms / 1000
        push = await entry_times(mon_conn, sale.push_latency_wall)
        confirmed = await confirm_times(mon_conn, sale.paid_wall)
        polled = await entry_times(mon_conn, sale.poll_latency_wall)
        for task in background:
            task.cancel()
        for task in background:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    return {
        "people": people,
        "first_tick": first_tick,
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
