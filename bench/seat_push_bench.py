"""Live seat-map deltas to many sockets: N customers hold the event's queue
WebSocket on ONE daphne while seats change at --rate a second for --seconds.
What it costs daphne and how late the seats turn grey, batched (the product:
``inventory.seating.pushes``, one message per tier per --interval) against one
message per seat change (--interval 0).

    .venv/bin/python bench/seat_push_bench.py                 # 1,000 sockets, 50 changes/s, batched
    .venv/bin/python bench/seat_push_bench.py --interval 0    # the same, one message per change
    .venv/bin/python bench/seat_push_bench.py --connections 10000 --rate 500

PostgreSQL, Redis and daphne as bench/ws_bench.py starts them (the same
seeding: WAITING customers with their tokens; the clients are its clients).
This process plays the web workers: it feeds ``--rate`` seat changes a second
(one seat each, as a claim of one seat would) to a ``SeatDeltaBuffer`` that
publishes through the real channel layer, or, with ``--interval 0``, publishes
each change as its own ``seats`` message. A change's label carries the moment
it was made (``S<n>@<monotonic>``, one clock on one machine), so each client
measures every message's lag: from its oldest change (the first) to its
arrival.

Exit status 1 when a socket missed a change (after --timeout).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.production_env import production_env
from bench.stack import BENCH_STACK_ENV
from bench.ws_bench import OUT_DIR, daphne_stats, ms, seed, services, start_daphne
from bench.ws_clients import Orchestrator, raise_nofile
from devtools import devstack


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python bench/seat_push_bench.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--connections", type=int, default=1_000, help="WebSockets (customers)")
    p.add_argument("--rate", type=float, default=50.0, help="seat changes a second")
    p.add_argument("--seconds", type=float, default=10.0, help="how long seats change")
    p.add_argument(
        "--interval", type=float, default=0.3, help="seconds between messages; 0: one per change"
    )
    p.add_argument("--client-procs", type=int, default=1, help="client processes (default 1)")
    p.add_argument("--connect-concurrency", type=int, default=100, help="handshakes in flight")
    p.add_argument("--timeout", type=float, default=120.0, help="wait for the last change")
    return p.parse_args(argv)


def feed(args: argparse.Namespace, event_id: uuid.UUID) -> tuple[int, int]:
    """Seat changes at --rate for --seconds; the changes and messages published."""
    from fairqueue.broadcast import event_group
    from inventory.seating.pushes import SeatDeltaBuffer
    from queueing.pushes import send_many

    tier_id = str(uuid.uuid4())
    buffer = SeatDeltaBuffer(interval=args.interval) if args.interval > 0 else None
    published = 0
    n = 0
    started = time.monotonic()
    while (now := time.monotonic()) - started < args.seconds:
        due = int((now - started) * args.rate) + 1
        while n < due:
            change = {"label": f"S{n}@{time.monotonic():.6f}", "status": "held"}
            if buffer is not None:
                buffer.add(event_id=event_id, tier_id=tier_id, changes=[change])
            else:
                message = {"type": "seats", "tier_id": tier_id, "version": n, "since": n}
                text = json.dumps({**message, "changes": [change]})  # as the buffer sends
                send_many([(event_group(event_id), text)])
                published += 1
            n += 1
        time.sleep(0.002)
    if buffer is not None:
        time.sleep(args.interval * 2)  # the last batch goes out one interval later
        buffer.flush()
        published = buffer.messages_sent
    return n, published


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    nofile = raise_nofile()
    if nofile < args.connections + 200:
        raise SystemExit(f"RLIMIT_NOFILE is {nofile}: too low for {args.connections} sockets")
    stack, env = services()
    daphne = orch = None
    try:
        env.update(BENCH_STACK_ENV)
        production_env(env)
        os.environ.update(env)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        from bench.queue_setup import django_setup

        django_setup()
        daphne, port = start_daphne(env)
        event_id, customers = seed(args.connections, 100)
        url = f"ws://127.0.0.1:{port}/ws/events/{event_id}/queue/"
        orch = Orchestrator(args, url, customers)
        opened = sum(s["opened"] for s in orch.connected())
        print(f"{opened:,}/{args.connections:,} sockets open on one daphne", flush=True)

        cpu = daphne_stats(daphne.pid)["cpu_s"]
        started = time.monotonic()
        changes, published = feed(args, event_id)
        fed = time.monotonic() - started
        answers = orch.ask(("seats", changes, time.monotonic() + args.timeout))
        all_in = time.monotonic() - started
        daphne_cpu = daphne_stats(daphne.pid)["cpu_s"] - cpu
        records = orch.ask(("finish",))

        frames = sum(a["messages"] for a in answers)
        complete = sum(a["complete"] for a in answers)
        lag = [x for a in answers for x in a["lag"]]
        mode = f"batched every {args.interval:g} s" if args.interval > 0 else "one per change"
        print(f"\nresults ({opened:,} sockets, {args.rate:g} changes/s for {fed:.1f} s, {mode})")
        print(f"  seat changes            {changes:,}")
        each = changes / max(published, 1)
        print(f"  messages published      {published:,} ({each:.1f} changes each)")
        print(f"  frames to clients       {frames:,} ({frames / max(opened, 1):.0f} per socket)")
        print(f"  sockets with every change {complete:,}/{opened:,}")
        print(f"  change -> client lag    {ms(lag, 50, 99)}")
        print(f"  all in after            {all_in:.1f} s (feeding took {fed:.1f} s)")
        share = daphne_cpu / all_in * 100
        print(f"  daphne CPU              {daphne_cpu:.1f} s ({share:.0f}% of a core until all in)")
        print(f"  client CPU              {sum(r['cpu_seconds'] for r in records):.1f} s")
        events: dict[str, int] = {}
        for r in records:
            for key, n in r["counts"].items():
                events[key] = events.get(key, 0) + n
        print(f"  client events           {events or 'none'}")
        print(f"  load average            {os.getloadavg()[0]:.1f} (1 min, at the end)")
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        (OUT_DIR / f"seat-push-{opened}-{args.interval:g}-{stamp}.json").write_text(
            json.dumps(
                {
                    "args": vars(args),
                    "changes": changes,
                    "published": published,
                    "frames": frames,
                    "complete": complete,
                    "lag_s": sorted(lag),
                    "daphne_cpu_s": daphne_cpu,
                    "all_in_s": all_in,
                }
            )
        )
        return 0 if complete == opened == args.connections else 1
    finally:
        if orch is not None:
            orch.stop()
        if daphne is not None:
            devstack.stop_groups([daphne])
        stack.close()


if __name__ == "__main__":
    sys.exit(main())
