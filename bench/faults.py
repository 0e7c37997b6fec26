"""Faults injected in the middle of a flash sale, and how long healing took.

Each scenario waits for its trigger (a share of the tickets sold), injects
the fault, and measures the time until the system is whole again:

* healthy  - ``/healthz`` answers 200 (Postgres and Redis reachable);
* rebuilt  - Redis holds the tier counters and a waiting set the size of the
             WAITING rows in Postgres (invariant 2);
* moving   - a claim was created or confirmed after the fault ended (the
             sale goes on), or the sale had already sold out.

Heal time is the latest of the three, from the end of the fault. A scenario
may add checks of its own, and requirements that fail the run (redis-down:
claims went on through Postgres, no admission window lost time). The run
then ends with the same invariant check as a clean run.

The shared parts are in ``fault_kit.py``, the Redis scenarios in
``faults_redis.py``.

Scenarios needing process control (redis-restart, redis-down, worker-kill, web-kill) need
``--launch-stack``; against a stack started elsewhere the operator does the
same by hand (``redis-cli shutdown nosave`` then start redis-server again;
``kill -9`` the Celery worker's process group and start it again; ``kill -9``
one web (granian) worker).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import random
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

from bench.fault_kit import FaultContext, FaultReport, in_thread, measure_heal
from bench.faults_redis import redis_down, redis_flush, redis_restart

NEEDS_STACK = {"redis-restart", "redis-down", "worker-kill", "web-kill"}
NEEDS_REDIS = {"redis-flush", "redis-restart", "redis-down", "worker-kill"}
FAULTS = (
    "redis-flush",
    "redis-restart",
    "redis-down",
    "worker-kill",
    "web-kill",
    "webhooks-duplicate",
    "webhooks-late",
    "webhooks-out-of-order",
    "gateway-5xx",
)


def _control(ctx: FaultContext) -> dict[str, str]:
    return {"X-Sandbox-Token": ctx.sandbox_token}


async def sandbox_config(ctx: FaultContext, **config: Any) -> None:
    url = f"{ctx.sandbox_url}/_sandbox/config"
    async with (
        aiohttp.ClientSession(headers=_control(ctx)) as session,
        session.post(url, json=config) as resp,
    ):
        if resp.status != 200:
            raise RuntimeError(f"sandbox config {config} -> {resp.status}: {await resp.text()}")


# --- the scenarios ----------------------------------------------------------------------


async def worker_kill(
    ctx: FaultContext, report: FaultReport, *, restart_after: float = 2.0
) -> None:
    """SIGKILL the Celery worker while an admission tick runs: the tick holds
    the event's admission lock (a Redis key) exactly while it runs."""
    lock = f"fq:{{{ctx.event_id}}}:queue:lock"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not await in_thread(ctx.redis.exists, lock):
        await asyncio.sleep(0.002)
    mid_tick = bool(await in_thread(ctx.redis.exists, lock))
    report.injected_at = ctx.now()
    pid = await in_thread(ctx.stack.kill, "worker", signal.SIGKILL)
    report.notes.append(
        f"celery worker group (pid {pid}) SIGKILLed "
        f"{'during' if mid_tick else 'outside'} an admission tick"
    )
    killed_ms = int(time.time() * 1000)
    left = await in_thread(ctx.redis.pttl, lock)
    if left and left > 0:
        report.notes.append(f"the killed tick left its admission lock, {left / 1000:.1f} s to live")
    await asyncio.sleep(restart_after)
    await in_thread(ctx.stack.restart, "worker")
    report.ended_at = ctx.now()
    # Healed once an admission tick has completed again: each finished tick of
    # an ACTIVE event pushes "<now ms>:<admitted>:<duration ms>" on this list.
    ticks = f"fq:{{{ctx.event_id}}}:queue:ticks"

    async def admission_ticking() -> bool:
        if ctx.sold_out.is_set():
            return True
        newest = await in_thread(ctx.redis.lindex, ticks, 0)
        return bool(newest) and int(newest.split(":", 1)[0]) > killed_ms

    report.checks["admission_ticking"] = admission_ticking


def _busy(pid: int) -> str | None:
    """Whether the process is inside a request: "running" when one of its
    threads is on a CPU (a granian worker runs Django on its blocking thread)."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    for task in tasks:
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] == "R":
            return "running"
    return None


async def web_kill(ctx: FaultContext, report: FaultReport, *, kills: int = 3) -> None:
    """SIGKILL a web (granian) worker while it is inside a request (not
    waiting for one), ``kills`` times 2 s apart; granian starts replacements
    (--respawn-failed-workers)."""
    report.injected_at = ctx.now()
    for _ in range(kills):
        deadline = time.monotonic() + 10
        victim = state = None
        while time.monotonic() < deadline and victim is None:
            for pid in ctx.stack.web_worker_pids():
                state = _busy(pid)
                if state is not None:
                    victim = pid
                    break
            else:
                await asyncio.sleep(0.001)
        if victim is None:
            report.notes.append("no web worker was busy for 10 s")
            continue
        os.kill(victim, signal.SIGKILL)
        report.notes.append(f"web worker {victim} SIGKILLed inside a request ({state})")
        await asyncio.sleep(2)
    report.ended_at = ctx.now()


async def webhooks_duplicate(
    ctx: FaultContext, report: FaultReport, *, seconds: float = 30.0
) -> None:
    report.injected_at = ctx.now()
    await sandbox_config(ctx, duplicate_webhooks=3)
    await asyncio.sleep(seconds)
    await sandbox_config(ctx, duplicate_webhooks=1)
    report.ended_at = ctx.now()
    report.notes.append(f"every webhook delivered 3 times, in parallel, for {seconds:g} s")


async def webhooks_late(ctx: FaultContext, report: FaultReport, *, late_payers: int = 20) -> None:
    """Webhooks delayed past the claim TTL, and customers who pay only after
    their claim expired (the success reaches a released claim)."""
    delay = ctx.claim_ttl + 2 * ctx.expiry_interval
    report.injected_at = ctx.now()
    await sandbox_config(ctx, webhook_delay_seconds=delay)
    ctx.sale.late_payers_left = late_payers
    await asyncio.sleep(20)
    await sandbox_config(ctx, webhook_delay_seconds=0)
    started = late_payers - ctx.sale.late_payers_left
    ctx.sale.late_payers_left = 0
    report.ended_at = ctx.now()
    report.notes.append(
        f"webhooks delayed {delay:g} s for 20 s; {started} customers paid after their claim expired"
    )
    # The late payers finish (claim expired, then paid) before healing is judged.
    deadline = time.monotonic() + ctx.claim_ttl + 4 * ctx.expiry_interval + 120
    while time.monotonic() < deadline and len(ctx.sale.late_payments) < started:
        await asyncio.sleep(1)
    report.ended_at = ctx.now()  # the last late success has been delivered
    waits = sorted(r["seconds"] for r in ctx.sale.late_payments if "seconds" in r)
    if waits:
        report.notes.append(
            f"late success -> claim status settled in p50 {waits[len(waits) // 2]:.1f} s, "
            f"max {waits[-1]:.1f} s"
        )
    outcomes: dict[str, int] = {}
    for record in ctx.sale.late_payments:
        key = f"{record['before']}->{record['after']}"
        outcomes[key] = outcomes.get(key, 0) + 1
    report.notes.append(f"late payers, claim status before->after paying: {outcomes}")


def _signed(ctx: FaultContext, body: dict[str, Any]) -> tuple[bytes, str]:
    raw = json.dumps(body, separators=(",", ":")).encode()
    return raw, hmac.new(ctx.paystack_secret.encode(), raw, hashlib.sha512).hexdigest()


async def webhooks_out_of_order(
    ctx: FaultContext, report: FaultReport, *, seconds: float = 20.0
) -> None:
    """Payments made for ``seconds`` get their webhooks held back, then
    delivered shuffled; each success is followed by a stale, correctly signed
    ``charge.failed`` for the same reference (an event Paystack never sends),
    which must change nothing."""
    report.injected_at = ctx.now()
    ctx.sale.webhook_mode = "hold"
    await asyncio.sleep(seconds)
    ctx.sale.webhook_mode = "normal"
    held = list(ctx.sale.held_references)
    ctx.sale.held_references.clear()
    random.shuffle(held)
    webhook_url = f"{ctx.http_url}/api/v1/webhooks/paystack/"
    stale_answers: dict[int, int] = {}
    control = _control(ctx)
    async with aiohttp.ClientSession() as session:
        for reference in held:
            resend = f"{ctx.sandbox_url}/_sandbox/webhooks/{reference}/resend"
            async with session.post(resend, headers=control) as r:
                await r.read()
            tx_url = f"{ctx.sandbox_url}/_sandbox/transactions/{reference}"
            async with session.get(tx_url, headers=control) as r:
                tx = (await r.json())["data"]
            stale = {
                "event": "charge.failed",
                "data": {
                    "id": tx["id"],
                    "status": "failed",
                    "reference": reference,
                    "amount": tx["amount"],
                    "currency": tx["currency"],
                    "gateway_response": "Declined",
                    "metadata": tx["metadata"],
                    "customer": {"email": tx["email"]},
                },
            }
            raw, signature = _signed(ctx, stale)
            async with session.post(
                webhook_url,
                data=raw,
                headers={"Content-Type": "application/json", "x-paystack-signature": signature},
            ) as r:
                stale_answers[r.status] = stale_answers.get(r.status, 0) + 1
    report.ended_at = ctx.now()
    report.notes.append(
        f"{len(held)} payments' webhooks held {seconds:g} s then delivered shuffled, each success "
        f"followed by a stale signed charge.failed (answers: {stale_answers})"
    )


async def gateway_5xx(ctx: FaultContext, report: FaultReport, *, seconds: float = 20.0) -> None:
    report.injected_at = ctx.now()
    await sandbox_config(ctx, fail_next_n_with_5xx=10**9)
    await asyncio.sleep(seconds)
    await sandbox_config(ctx, fail_next_n_with_5xx=0)
    report.ended_at = ctx.now()
    report.notes.append(f"every gateway API call answered 500 for {seconds:g} s")
    # Payments the outage left INITIALIZING (never reached the gateway) must be
    # initialized again (or failed) by reconciliation.
    ended_wall = time.time()
    stuck_sql = (
        "SELECT COUNT(*) FROM payments_payment p JOIN claims_claim c ON c.id = p.claim_id "
        "WHERE c.event_id = %s AND p.status = 'INITIALIZING' AND p.created_at < to_timestamp(%s)"
    )
    stuck = (await ctx.query(stuck_sql, [ctx.event_id, ended_wall]))[0][0]
    report.notes.append(f"{stuck} payments left INITIALIZING by the outage")

    async def initializing_cleared() -> bool:
        return not (await ctx.query(stuck_sql, [ctx.event_id, ended_wall]))[0][0]

    report.checks["initializing_cleared"] = initializing_cleared


SCENARIOS: dict[str, Callable[[FaultContext, FaultReport], Awaitable[None]]] = {
    "redis-flush": redis_flush,
    "redis-restart": redis_restart,
    "redis-down": redis_down,
    "worker-kill": worker_kill,
    "web-kill": web_kill,
    "webhooks-duplicate": webhooks_duplicate,
    "webhooks-late": webhooks_late,
    "webhooks-out-of-order": webhooks_out_of_order,
    "gateway-5xx": gateway_5xx,
}


async def run_fault(name: str, ctx: FaultContext, trigger: asyncio.Event) -> FaultReport:
    report = FaultReport(name)
    await trigger.wait()
    try:
        await SCENARIOS[name](ctx, report)
    except Exception as exc:  # a failed injection is a result to report, not a crash
        report.notes.append(f"injection failed: {type(exc).__name__}: {exc}")
        report.ended_at = report.ended_at or ctx.now()
        return report
    since_wall = time.time() - (ctx.now() - report.ended_at)
    await measure_heal(ctx, report, since_wall=since_wall)
    for requirement in report.requirements:
        problem = await requirement()
        if problem:
            report.violations.append(problem)
    return report
