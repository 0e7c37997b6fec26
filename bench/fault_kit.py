"""What every fault scenario of the flash-sale benchmark shares: the report
of a fault, the context a scenario may touch, and the heal measurement
(healthy, rebuilt, moving, plus each scenario's own checks)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp


@dataclass
class FaultReport:
    name: str
    injected_at: float = 0.0  # bench clock (seconds since the sale started)
    ended_at: float = 0.0
    heal: dict[str, float] = field(default_factory=dict)  # component -> seconds after ended_at
    notes: list[str] = field(default_factory=list)
    # Scenario-specific heal checks, measured alongside the three common ones.
    checks: dict[str, Callable[[], Awaitable[bool]]] = field(default_factory=dict, repr=False)
    # Scenario-specific requirements, judged once healing was measured: each
    # answers a problem (the run fails) or None.
    requirements: list[Callable[[], Awaitable[str | None]]] = field(
        default_factory=list, repr=False
    )
    violations: list[str] = field(default_factory=list)

    @property
    def heal_seconds(self) -> float | None:
        if not self.heal or any(v < 0 for v in self.heal.values()):
            return None
        return max(self.heal.values())


@dataclass
class FaultContext:
    """What a scenario may touch. ``query`` runs SQL on the bench's own
    Postgres connection; ``redis`` is a redis-py client (or None)."""

    sale: Any  # bench.customers.Sale
    event_id: str
    tier_ids: list[str]
    http_url: str
    sandbox_url: str
    now: Callable[[], float]
    query: Callable[[str, Any], Awaitable[list[tuple]]]
    sold_out: asyncio.Event
    redis: Any = None
    stack: Any = None  # bench.stack.LocalStack when --launch-stack
    paystack_secret: str = "sk_test_fairqueue_sandbox"  # noqa: S105 - the sandbox's public test key
    sandbox_token: str = ""  # the sandbox control API's X-Sandbox-Token
    claim_ttl: float = 600.0
    expiry_interval: float = 30.0
    heal_timeout: float = 180.0
    window_seconds: float = 120.0  # the event's time to choose
    admission_interval: float = 5.0


async def in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


async def _healthy(ctx: FaultContext) -> bool:
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{ctx.http_url}/healthz", timeout=aiohttp.ClientTimeout(total=30)) as r,
        ):
            return r.status == 200
    except (aiohttp.ClientError, TimeoutError, OSError):
        return False


async def _rebuilt(ctx: FaultContext) -> bool:
    if ctx.redis is None:
        return True
    tag = f"fq:{{{ctx.event_id}}}"
    try:
        counters = await in_thread(
            ctx.redis.mget, [f"{tag}:tier:{t}:available" for t in ctx.tier_ids]
        )
        zcard = await in_thread(ctx.redis.zcard, f"{tag}:queue:waiting")
    except Exception:  # Redis still down
        return False
    if any(v is None for v in counters):
        return False
    rows = await ctx.query(
        "SELECT COUNT(*) FROM queueing_queueentry WHERE event_id = %s AND status = 'WAITING'",
        [ctx.event_id],
    )
    waiting = rows[0][0]
    return abs(zcard - waiting) <= max(5, waiting // 100)


async def _moving(ctx: FaultContext, since_wall: float) -> bool:
    if ctx.sold_out.is_set():
        return True
    rows = await ctx.query(
        """
        SELECT (SELECT COUNT(*) FROM claims_claim
                WHERE event_id = %(e)s AND created_at > to_timestamp(%(t)s))
             + (SELECT COUNT(*) FROM claims_claim
                WHERE event_id = %(e)s AND confirmed_at > to_timestamp(%(t)s))
        """,
        {"e": ctx.event_id, "t": since_wall},
    )
    return rows[0][0] > 0


async def measure_heal(ctx: FaultContext, report: FaultReport, *, since_wall: float) -> None:
    """Fill report.heal with the seconds (after report.ended_at) each check
    first held; -1 for a check that never held within heal_timeout."""
    checks = {
        "healthy": lambda: _healthy(ctx),
        "rebuilt": lambda: _rebuilt(ctx),
        "moving": lambda: _moving(ctx, since_wall),
        **report.checks,
    }
    pending = dict(checks)
    deadline = time.monotonic() + ctx.heal_timeout
    while pending and time.monotonic() < deadline:
        for name, check in list(pending.items()):
            if await check():
                report.heal[name] = round(ctx.now() - report.ended_at, 2)
                del pending[name]
        await asyncio.sleep(0.25)
    for name in pending:
        report.heal[name] = -1.0
