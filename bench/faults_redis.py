"""The Redis faults of the flash-sale benchmark: wiped, restarted, and down
for a while (``redis-down``: the sale goes on through Postgres alone)."""

from __future__ import annotations

import asyncio
import time

from bench.fault_kit import FaultContext, FaultReport, in_thread


def _restart(ctx: FaultContext) -> None:
    """Start redis-server again from the main thread (a few tens of ms): the
    server is started to die with the thread that started it (Linux's
    parent-death signal follows the thread), and an executor thread goes away
    when the sale's event loop closes, which would stop Redis before the
    final checks."""
    ctx.stack.redis_start()


async def redis_flush(ctx: FaultContext, report: FaultReport) -> None:
    report.injected_at = ctx.now()
    await in_thread(ctx.redis.flushall)
    report.ended_at = ctx.now()
    report.notes.append("FLUSHALL: queue sets, counters, locks, Celery broker queues all gone")


async def redis_restart(
    ctx: FaultContext, report: FaultReport, *, down_seconds: float = 10.0
) -> None:
    report.injected_at = ctx.now()
    await in_thread(ctx.stack.redis_stop)
    await asyncio.sleep(down_seconds)
    _restart(ctx)
    report.ended_at = ctx.now()
    report.notes.append(
        f"redis-server SIGKILLed, down {down_seconds:g} s, restarted empty on the same port"
    )


async def redis_down(ctx: FaultContext, report: FaultReport, *, down_seconds: float = 20.0) -> None:
    """redis-server SIGKILLed in the middle of the sale and kept down
    ``down_seconds``, then started again empty. Redis is only a performance
    layer, so the run must show (each a requirement; the run fails without it):

    - claims made during the outage, through the Postgres guard alone;
    - no admission window lost to the outage: a customer admitted before or
      during it whose window was running then still had, after it, the time
      the outage took (their window is given it back);
    - after it: the usual heal (healthy, rebuilt, moving) and invariant check.

    With Celery's broker on the same Redis no task runs while it is down
    either; the first admission tick after it finds that the clock stood
    still."""
    window = ctx.window_seconds
    interval = ctx.admission_interval
    report.injected_at = ctx.now()
    down_wall = time.time()
    await in_thread(ctx.stack.redis_stop)
    await asyncio.sleep(down_seconds)
    up_wall = time.time()
    _restart(ctx)
    report.ended_at = ctx.now()
    claims = ctx.sale.rec.samples.get("claim", [])
    during = [s for s in claims if report.injected_at <= s.t <= report.ended_at]
    answers: dict[int, int] = {}
    for sample in during:
        answers[sample.status] = answers.get(sample.status, 0) + 1
    made = (
        await ctx.query(
            "SELECT COUNT(*) FROM claims_claim WHERE event_id = %s "
            "AND created_at BETWEEN to_timestamp(%s) AND to_timestamp(%s)",
            [ctx.event_id, down_wall, up_wall],
        )
    )[0][0]
    sold_out_before = (
        await ctx.query(
            "SELECT NOT EXISTS (SELECT 1 FROM events_ticket k JOIN events_tickettier t "
            "ON t.id = k.tier_id WHERE t.event_id = %s AND k.claim_id IS NULL)",
            [ctx.event_id],
        )
    )[0][0]
    report.notes.append(
        f"redis-server SIGKILLed, down {down_seconds:g} s, restarted empty on the same port; "
        f"{made} claims made in Postgres meanwhile; claim answers during it: {answers}"
    )

    async def claims_went_on() -> str | None:
        if made > 0 or (sold_out_before and not answers):
            return None
        return f"no claim was made while Redis was down (claim answers: {answers})"

    # An admission window that overlapped the outage must end no sooner than
    # its length plus that overlap (give or take a tick and a second).
    cut_short_sql = """
        SELECT COUNT(*) FROM queueing_queueentry q
        WHERE q.event_id = %(e)s AND q.status = 'EXPIRED' AND q.end_reason = 'admission_window'
          AND q.admitted_at < to_timestamp(%(up)s)
          AND q.admitted_at + make_interval(secs => %(w)s) > to_timestamp(%(down)s)
          AND q.finished_at < q.admitted_at + make_interval(secs => %(w)s - %(slack)s)
              + (LEAST(to_timestamp(%(up)s), q.admitted_at + make_interval(secs => %(w)s))
                 - GREATEST(to_timestamp(%(down)s), q.admitted_at))
    """
    params = {"e": ctx.event_id, "up": up_wall, "down": down_wall, "w": window}
    params["slack"] = interval + 1.0

    async def windows_given_back() -> str | None:
        cut = (await ctx.query(cut_short_sql, params))[0][0]
        return None if not cut else f"{cut} admission windows lost time to the outage"

    async def kept_places() -> bool:
        return await windows_given_back() is None

    report.checks["windows_kept"] = kept_places
    report.requirements += [claims_went_on, windows_given_back]
