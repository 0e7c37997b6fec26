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
``manage.py create_event`` / ``mint_customer_tokens``, and the invariants are
checked by ``manage.py check_invariants`` (the same command ops run).

The customers follow the waiting-room page's rules (bench/customers.py,
bench/page.py). It prints progress while it runs and, at the end, per-endpoint
throughput and latency, errors by code, the times to 95 % and 100 % sold beside
the **protocol floor** (the same customers and admission rules replayed at zero
CPU, bench/floor.py) and their ratio, the authenticated requests per waiting
customer, machine CPU per ticket sold, admission push latency, fault heal
times and the invariant check; exit status 1 if any invariant fails. Results
(JSON) and plots (PNG) go to bench/out/.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import report
from bench.customers import BEHAVIOURS
from bench.faults import FAULTS, NEEDS_REDIS, NEEDS_STACK
from bench.floor import Floor, Person, Rules, replay
from bench.sale_run import run_sale
from bench.stack import check_invariants, manage
from events.domain import CHOOSE_SECONDS_DEFAULT

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
        "--web-workers", type=int, default=2, help="web (granian) workers (--launch-stack)"
    )
    where.add_argument(
        "--gateway-latency",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="every call to the sandbox gateway takes this long (Paystack's round trip)",
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
        "--window-seconds",
        type=int,
        default=CHOOSE_SECONDS_DEFAULT,
        help="an admitted customer's time to choose (default: the product's, "
        f"{CHOOSE_SECONDS_DEFAULT} s); a claim then has CLAIM_TTL_SECONDS to pay",
    )
    sale.add_argument(
        "--ws-customers", type=int, default=5_000, help="customers holding a WebSocket"
    )
    sale.add_argument(
        "--prequeue-seconds",
        type=float,
        default=30.0,
        help="the pre-queue is open this long before the sale starts (0: no pre-queue)",
    )
    sale.add_argument(
        "--prequeue-share",
        type=float,
        default=0.8,
        help="share of customers already in the pre-queue when the sale opens",
    )
    sale.add_argument(
        "--after-open-seconds",
        type=float,
        default=60.0,
        help="the rest arrive over this long after the sale opens",
    )
    sale.add_argument(
        "--join-seconds",
        type=float,
        default=5.0,
        help="without a pre-queue: arrivals spread over this",
    )
    sale.add_argument("--concurrency", type=int, default=200, help="joins in flight at most")
    sale.add_argument(
        "--poll-concurrency",
        type=int,
        default=100,
        help="line-state reads and the pages' questions in flight at most",
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
        "--no-edge-cache",
        action="store_true",
        help="every line-state read goes to the origin (default: reads within a second share"
        " one origin read, as compose's nginx micro-cache or a CDN serves them)",
    )
    shares = {
        "abandon_queue": (0.05, "leave the queue while waiting"),
        "lapse_admission": (0.02, "are admitted and never claim (a forgotten tab)"),
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
    out.add_argument(
        "--sold-plot-copy",
        type=Path,
        help="also write the plot of tickets sold against the floor here (e.g. docs/img/...)",
    )
    out.add_argument(
        "--trace", type=int, default=0, metavar="N",
        help="write the waiting of N customers without a socket (each read and answer) to the"
        " results' directory",
    )  # fmt: skip
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
    if args.prequeue_seconds > 0:
        # A placeholder sale start: the run sets the real one when customers
        # start arriving (bench/sale_run.py), so setup time does not count.
        now = datetime.now(UTC)
        cmd += [
            "--prequeue-opens-at", (now - timedelta(minutes=1)).isoformat(),
            "--sale-start", (now + timedelta(days=1)).isoformat(),
            "--sale-end", (now + timedelta(days=2)).isoformat(),
        ]  # fmt: skip
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


# --- after the sale ----------------------------------------------------------------------


def settle_and_check(
    args: argparse.Namespace, event_id: str, redis_client: Any, env: dict
) -> tuple[list[dict], dict, float]:
    """Wait until ``manage.py check_invariants --settled --sold-out`` passes
    (reconciliation and expiry caught up, Redis rebuilt), then return its
    checks, the event's status counts and how long settling took (-1: not in
    time). A failing always-true check stops the wait: no waiting heals it."""
    admission_interval = float(env.get("ADMISSION_INTERVAL_SECONDS", 5))
    reconcile_interval = float(env.get("RECONCILE_INTERVAL_SECONDS", 30))
    flags = ["--settled", "--sold-out", "--grace", str(2 * admission_interval)]
    if redis_client is None:
        flags.append("--no-redis")
    started = time.monotonic()
    deadline = started + args.settle_seconds + 2 * reconcile_interval + 10
    while True:
        report = check_invariants(env, event_id, *flags)
        checks = report["database"] + report["events"][0]["checks"]
        if report["ok"]:
            settle = time.monotonic() - started
            break
        broken = any(c["when"] == "always" and not c["ok"] for c in checks)
        if broken or time.monotonic() >= deadline:
            settle = -1.0
            break
        time.sleep(2.0)
    return checks, report["events"][0]["counts"], settle


def protocol_floor(args: argparse.Namespace, result: dict, env: dict) -> Floor:
    """The same customers and the stack's admission rules, replayed at zero CPU;
    the ticks in the phase the beat ran them (measured from the first admission)."""
    people = [
        Person(c.arrive_at or 0.0, c.behaviour, c.ws, c.leave_after) for c in result["people"]
    ]
    interval = float(env.get("ADMISSION_INTERVAL_SECONDS", 5))
    first = result.get("first_tick")
    rules = Rules(
        inventory=result["inventory"],
        batch_size=args.batch_size,
        interval=interval,
        window=float(args.window_seconds),
        claim_ttl=float(env.get("CLAIM_TTL_SECONDS", 600)),
        expiry_interval=float(env.get("EXPIRY_INTERVAL_SECONDS", 30)),
        sale_start=max(0.0, args.prequeue_seconds),
        tick_phase=first % interval if first is not None and first >= 0 else 0.0,
        relearn_per_second=float(env.get("QUEUE_RELEARN_PER_SECOND", 1000)),
        until=args.max_seconds,
    )
    return replay(people, rules, seed=args.seed)


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
        if args.trace:
            traced = {c.id: c.trace for c in result["people"] if c.trace is not None}
            (args.out / f"trace-{run_name}.json").write_text(json.dumps(traced, default=str))
        floor = protocol_floor(args, result, env)
        data = report.print_results(args, result, checks, counts, settle, env, floor)
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
        sold_png = args.out / f"flashsale-{run_name}-sold.png"
        for path in filter(None, (sold_png, args.sold_plot_copy)):
            report.plot_sold(path, result["monitor"], floor, title=title)
        print(f"plots: {png}, {sold_png}")
        return 0 if data["ok"] else 1
    finally:
        if stack is not None:
            stack.stop()


if __name__ == "__main__":
    sys.exit(main())
