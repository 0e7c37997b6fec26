"""Reserved seating: seat-claim throughput and the cost of the seat-map read.

    DATABASE_URL=... REDIS_URL=... python bench/seats_bench.py \
        [--rows 20 --per-row 20] [--customers 400] [--threads 16] \
        [--mode pick|best] [--reads 2000] [--json FILE]

In one process, against the Postgres and Redis of the environment:

1. An ACTIVE event with one reserved tier of ``--rows`` x ``--per-row``
   seats (A-1 ...), its Redis counter synced; ``--customers`` admitted
   customers (Postgres rows, Redis admitted set, admission tokens).
2. Seat claims: ``--threads`` threads run every customer's claim through the
   claim service (``claim_create``, the code behind ``POST .../claims/``):
   ``pick`` chooses 2 adjacent seats at random (so customers collide and
   some are told ``seats_unavailable``), ``best`` asks for 2 seats by
   quantity (best available). A 503 busy is retried after 10 ms. Prints
   claims/s (successful claims over the run), answers/s, p50/p99 per
   answer, the answers by code, and checks that no seat is in two claims.
3. Seat-map reads: the rebuild from Postgres (the map is rendered, gzipped
   and stored, as after a change), then ``--reads`` reads through the full
   Django stack (``GET /api/v1/events/{id}/tiers/{tier_id}/seats/`` with the
   test client and ``Accept-Encoding: gzip``, one thread, then ``--threads``
   threads), with the Redis commands and Postgres queries counted per read;
   and a tenth as many reads without gzip (the map unzipped per read).

The sale's rows stay in the database (an event named "seats bench <time>").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import threading
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import percentile
from bench.production_env import production_env


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--per-row", type=int, default=20)
    parser.add_argument("--customers", type=int, default=400)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--mode", choices=["pick", "best"], default="pick")
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--json", type=Path, help="also write the results here")
    return parser.parse_args(argv)


def django_setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DJANGO_DEBUG", "false")
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver,127.0.0.1")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    production_env(os.environ)
    import django

    django.setup()


def prepare(*, rows: int, per_row: int, customers: int) -> dict[str, Any]:
    from django.utils import timezone

    from bench.queue_setup import seed_admitted
    from events.models import Organizer
    from events.services import TierSpec, event_activate, event_create

    organizer, _ = Organizer.objects.get_or_create(name="Seats bench")
    now = timezone.now()
    event = event_create(
        organizer=organizer,
        name=f"seats bench {time.strftime('%Y%m%d-%H%M%S')}",
        sale_start=now - timedelta(minutes=1),
        sale_end=now + timedelta(hours=2),
        tiers=[TierSpec.reserved(name="Stalls", price=500_000, rows=rows, seats_per_row=per_row)],
        max_tickets_per_customer=2,
        max_active_admitted=max(customers, 1),
    )
    event_activate(event_id=event.pk)
    tier = event.tiers.get()
    buyers = [
        (customer.id, admission)
        for customer, admission in seed_admitted(event, count=customers, prefix="seat")
    ]
    return {"event_id": event.pk, "tier_id": tier.pk, "buyers": buyers}


def run_claims(sale: dict, *, rows: int, per_row: int, threads: int, mode: str) -> dict:
    from django.db import connection

    from claims.services import claim_create
    from fairqueue.errors import AppError
    from inventory.seating.domain import row_letters

    rng = random.Random(17)
    picks = []
    for _ in sale["buyers"]:
        row, first = row_letters(rng.randrange(rows)), rng.randint(1, max(per_row - 1, 1))
        picks.append([f"{row}-{first}", f"{row}-{first + 1}"])
    work = list(zip(sale["buyers"], picks, strict=True))
    lock = threading.Lock()
    latencies: list[float] = []
    answers: Counter[str] = Counter()

    def one(buyer: tuple, seats: list[str]) -> str:
        customer_id, token = buyer
        for _ in range(200):
            try:
                claim_create(
                    event_id=sale["event_id"],
                    customer_id=customer_id,
                    admission_token=token,
                    tier_id=sale["tier_id"],
                    **({"seats": seats} if mode == "pick" else {"quantity": 2}),
                )
                return "201"
            except AppError as exc:
                if exc.code != "busy":
                    return exc.code
                time.sleep(0.01)
        return "busy"

    def worker() -> None:
        try:
            while True:
                with lock:
                    if not work:
                        return
                    buyer, seats = work.pop()
                began = time.perf_counter()
                code = one(buyer, seats)
                took = time.perf_counter() - began
                with lock:
                    latencies.append(took)
                    answers[code] += 1
        finally:
            connection.close()

    began = time.perf_counter()
    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    span = time.perf_counter() - began
    latencies.sort()
    return {
        "mode": mode,
        "threads": threads,
        "answers": dict(answers),
        "seconds": round(span, 2),
        "claims_per_s": round(answers["201"] / span, 1),
        "answers_per_s": round(len(latencies) / span, 1),
        "p50_ms": round(percentile(latencies, 50) * 1000, 1),
        "p99_ms": round(percentile(latencies, 99) * 1000, 1),
    }


def check_seats(sale: dict) -> dict:
    from claims.models import Claim
    from inventory.models import Ticket

    seen: Counter[str] = Counter()
    claims = Claim.objects.filter(tier_id=sale["tier_id"])
    for seats in claims.values_list("seats", flat=True):
        seen.update(seats)
    held = Ticket.objects.filter(tier_id=sale["tier_id"], claim__isnull=False).count()
    return {
        "claims": claims.count(),
        "seats_held": held,
        "no_seat_twice": all(n == 1 for n in seen.values()) and held == sum(seen.values()),
    }


class Counted:
    """Counts Redis commands sent by this process (the seat-map read's one
    round trip) by wrapping the client's execute_command."""

    def __init__(self) -> None:
        from fairqueue.redis import get_redis

        self.client = get_redis()
        self.count = 0
        original = self.client.execute_command

        def counting(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return original(*args, **kwargs)

        self.client.execute_command = counting  # type: ignore[method-assign]


def run_reads(sale: dict, *, reads: int, threads: int) -> dict:
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from fairqueue.redis import get_redis
    from inventory.seating.seatmap import seat_map_json, seat_map_store

    event_id, tier_id = sale["event_id"], sale["tier_id"]
    url = f"/api/v1/events/{event_id}/tiers/{tier_id}/seats/"
    rebuilds = []
    for _ in range(5):
        get_redis().delete(seat_map_store().keys(event_id, tier_id)[0])
        get_redis().delete(seat_map_store().keys(event_id, tier_id)[2])
        began = time.perf_counter()
        body = seat_map_json(event_id=event_id, tier_id=tier_id)
        rebuilds.append(time.perf_counter() - began)
    client = Client(HTTP_ACCEPT_ENCODING="gzip")  # as browsers send it
    assert client.get(url).status_code == 200
    counted = Counted()
    before = counted.count
    with CaptureQueriesContext(connection) as queries:
        began = time.perf_counter()
        for _ in range(reads):
            client.get(url)
        one_thread = time.perf_counter() - began
    redis_per_read = (counted.count - before) / reads
    reset_queries()
    plain_reads = max(reads // 10, 1)
    plain_client = Client()  # no gzip: the map is unzipped per read
    began = time.perf_counter()
    for _ in range(plain_reads):
        plain_client.get(url)
    plain = time.perf_counter() - began
    gzip_bytes = len(client.get(url).content)

    def reader() -> None:
        own = Client(HTTP_ACCEPT_ENCODING="gzip")
        try:
            for _ in range(reads // threads):
                own.get(url)
        finally:
            connection.close()

    pool = [threading.Thread(target=reader) for _ in range(threads)]
    began = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    many = time.perf_counter() - began
    rebuilds.sort()
    return {
        "map_bytes": len(body.encode()),
        "map_bytes_gzip": gzip_bytes,
        "read_ms_without_gzip": round(plain / plain_reads * 1000, 3),
        "rebuild_ms_median": round(rebuilds[len(rebuilds) // 2] * 1000, 1),
        "read_ms_one_thread": round(one_thread / reads * 1000, 3),
        "reads_per_s_one_thread": round(reads / one_thread, 1),
        "reads_per_s_threads": round((reads // threads) * threads / many, 1),
        "redis_commands_per_read": round(redis_per_read, 2),
        "postgres_queries_per_read": round(len(queries) / reads, 3),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    django_setup()
    began = time.perf_counter()
    sale = prepare(rows=args.rows, per_row=args.per_row, customers=args.customers)
    print(f"prepared {args.rows * args.per_row} seats, {args.customers} customers "
          f"in {time.perf_counter() - began:.1f} s")  # fmt: skip
    load = os.getloadavg()
    claims = run_claims(
        sale, rows=args.rows, per_row=args.per_row, threads=args.threads, mode=args.mode
    )
    checks = check_seats(sale)
    reads = run_reads(sale, reads=args.reads, threads=args.threads)
    result = {
        "seats": args.rows * args.per_row,
        "customers": args.customers,
        "claims": claims,
        "checks": checks,
        "reads": reads,
        "load_average_before": [round(x, 2) for x in load],
        "machine": f"{os.cpu_count()} CPUs, Python {platform.python_version()}",
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0 if checks["no_seat_twice"] else 1


if __name__ == "__main__":
    sys.exit(main())
