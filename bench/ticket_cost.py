"""What one ticket sold costs the machine: a buying phase (claim, payment
start, the gateway's webhook, the confirmation email) run in this process,
with the CPU of every process that works for it, per step.

    DATABASE_URL=... REDIS_URL=... .venv/bin/python bench/ticket_cost.py [--tickets 150]

Each buyer (admitted, signed in, one ticket) goes through the requests its
page sends, through the whole Django stack (``config.wsgi.application``, the
HTTP server left out), one at a time: POST claims/ and POST payments/ (each
with an Idempotency-Key, as the page sends them), then pays at the sandbox
gateway (in-process, not counted) and the gateway's signed ``charge.success``
is posted to the webhook. The Celery tasks these enqueue (the confirmation
email) are run here, in the worker's place, after the request that enqueued
them. Per step it prints:

- web: this thread's CPU (``time.thread_time``) in the requests;
- worker: the same, in the tasks;
- Postgres: the CPU of every process of the cluster, the postmaster and its
  children (read from ``/proc/<pid>/task/*/schedstat``, nanoseconds on the
  CPU) while the step ran;
- Redis: the same for redis-server;
- statements: Postgres round trips (BEGIN and COMMIT count), counted at the
  client (bench/roundtrips.py), and Redis round trips.

It runs the web process's production settings (``DJANGO_DEBUG=false``,
prepared statements on). Postgres and Redis must be this machine's and this
run's alone (``python -m devtools.devstack services`` starts a pair): their
whole CPU is counted. A busy machine inflates the CPU figures, not the
statement counts; the load average is printed with them.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.request_cost import HOST, environ
from bench.roundtrips import RoundTrips

STEPS = ("claim", "payment start", "webhook", "confirmation email")
PROCESSES = ("web", "worker", "Postgres", "Redis")


def _on_cpu_ns(pid: int) -> int:
    """Nanoseconds this process (all its threads) has run on a CPU."""
    total = 0
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return 0
    for task in tasks:
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue
    return total


def _children(pid: int) -> list[int]:
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        return [int(c) for t in tasks for c in (t / "children").read_text().split()]
    except OSError:
        return []


class Processes:
    """A server's processes: one, or a parent and its children (Postgres'
    postmaster and the backends and workers it starts and ends)."""

    def __init__(self, pid: int, *, with_children: bool) -> None:
        self.pid, self.with_children = pid, with_children

    def reading(self) -> dict[int, int]:
        pids = [self.pid, *(_children(self.pid) if self.with_children else [])]
        return {pid: _on_cpu_ns(pid) for pid in pids}

    @staticmethod
    def spent_ns(before: dict[int, int], after: dict[int, int]) -> int:
        """CPU between two readings: a process started meanwhile counts whole;
        one that ended meanwhile is missed (its last moments)."""
        return sum(ns - before.get(pid, 0) for pid, ns in after.items())


def _cpu_profile() -> cProfile.Profile:
    """A profile of this thread's CPU time (not wall time: a step that waits
    on Postgres or the gateway would show the wait)."""
    return cProfile.Profile(time.thread_time)


class Meter:
    """CPU (ms) and round trips per step and process, summed over the run."""

    def __init__(
        self, postgres: Processes, redis: Processes, counter: RoundTrips, *, profile: bool
    ) -> None:
        self.postgres, self.redis, self.counter = postgres, redis, counter
        self.profiles: dict[str, cProfile.Profile] | None = (
            defaultdict(_cpu_profile) if profile else None
        )
        self.cpu: dict[tuple[str, str], float] = defaultdict(float)
        self.trips: dict[tuple[str, str], int] = defaultdict(int)
        self.samples: dict[str, list[float]] = defaultdict(list)

    def run(self, step: str, process: str, work: Callable[[], Any]) -> Any:
        self.counter.reset()
        pg, rd = self.postgres.reading(), self.redis.reading()
        profile = self.profiles[step] if self.profiles is not None else None
        if profile:
            profile.enable()
        started = time.thread_time()
        result = work()
        own = time.thread_time() - started
        if profile:
            profile.disable()
        pg = Processes.spent_ns(pg, self.postgres.reading())
        rd = Processes.spent_ns(rd, self.redis.reading())
        self.cpu[step, process] += 1000 * own
        self.cpu[step, "Postgres"] += pg / 1e6
        self.cpu[step, "Redis"] += rd / 1e6
        self.trips[step, "Postgres"] += self.counter.postgres
        self.trips[step, "Redis"] += self.counter.redis
        if process == "web":  # the p50s are of requests (the worker's runs are mostly none)
            self.samples[step].append(1000 * own)
        return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tickets", type=int, default=150)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile of this thread's CPU time: per step, the top functions by cumulative time",
    )
    args = parser.parse_args()
    os.environ["DJANGO_DEBUG"] = "false"  # production: no query log, prepared statements
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", HOST)
    from bench.production_env import production_env

    production_env(os.environ)
    from bench.queue_setup import django_setup

    django_setup()
    from celery.app.task import Task
    from django.conf import settings
    from django.db import connection

    from bench.claims_bench import prepare_sale
    from claims.models import Claim
    from config.wsgi import application
    from devtools.sandbox import SandboxServer, charges
    from fairqueue.redis import get_redis
    from payments.models import Payment
    from payments.paystack import sign

    sandbox = SandboxServer(port=0, secret_key=settings.PAYSTACK_SECRET_KEY).start()
    sandbox.app.webhook_url = "http://127.0.0.1:9/unused"  # the bench delivers them
    settings.PAYSTACK_BASE_URL = sandbox.url

    answers: list[tuple[str, int, bytes]] = []

    def send(step: str, env: dict) -> dict:
        status: list[str] = []

        def start_response(line: str, headers: list, exc_info: object = None) -> None:
            status.append(line)

        answer = application(env, start_response)
        body = b"".join(answer)
        answer.close()
        answers.append((step, int(status[0].split()[0]), body))
        return json.loads(body) if body else {}

    queued: list[tuple[Task, tuple]] = []
    publish = Task.apply_async

    def capture(self: Task, args: Any = None, kwargs: Any = None, **options: Any) -> None:
        queued.append((self, tuple(args or ())))

    def worker() -> int:
        ran = 0
        while queued:
            task, task_args = queued.pop(0)
            task.run(*task_args)
            ran += 1
        return ran

    sale = prepare_sale(customers=args.tickets, tickets=args.tickets)
    claims_url = f"/api/v1/events/{sale['event_id']}/claims/"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    postmaster = int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
    postgres = Processes(postmaster, with_children=True)
    redis = Processes(int(get_redis().info("server")["process_id"]), with_children=False)

    def post(path: str, bearer: str, body: dict) -> dict:
        env = environ("POST", path, bearer, json.dumps(body).encode())
        env["HTTP_IDEMPOTENCY_KEY"] = str(uuid.uuid4())
        return env

    counter = RoundTrips()
    meter = Meter(postgres, redis, counter, profile=args.profile)
    tasks = 0
    Task.apply_async = capture  # type: ignore[method-assign]
    try:
        with counter:
            for bearer, admission in sale["buyers"]:
                body = {"admission_token": admission, "tier_id": sale["tier_id"], "quantity": 1}
                claim_env = post(claims_url, bearer, body)
                claim = meter.run("claim", "web", lambda e=claim_env: send("claim", e))
                payment_env = post(f"/api/v1/claims/{claim['claim_id']}/payments/", bearer, {})
                payment = meter.run(
                    "payment start", "web", lambda e=payment_env: send("payment", e)
                )
                tasks += meter.run("payment start", "worker", worker)
                reference = payment["reference"]
                charges.settle(sandbox.app, reference, outcome="success", send_webhook=False)
                hook = sandbox.app.webhook_body(reference)
                env = environ("POST", "/api/v1/webhooks/paystack/", "", hook)
                env["HTTP_X_PAYSTACK_SIGNATURE"] = sign(hook, settings.PAYSTACK_SECRET_KEY)
                del env["HTTP_AUTHORIZATION"]
                meter.run("webhook", "web", lambda env=env: send("webhook", env))
                tasks += meter.run("confirmation email", "worker", worker)
    finally:
        Task.apply_async = publish  # type: ignore[method-assign]
        sandbox.stop()

    n = args.tickets
    bad = [(step, status, body[:200]) for step, status, body in answers if status >= 300]
    confirmed = Claim.objects.filter(
        event_id=sale["event_id"], status="CONFIRMED", issued_tickets__emailed_at__isnull=False
    ).count()
    paid = Payment.objects.filter(claim__event_id=sale["event_id"], status="CONFIRMED").count()
    print(f"code: {Path(sys.modules[Claim.__module__].__file__).parent.parent}")
    print(
        f"{n} tickets, one buyer at a time: {paid} payments CONFIRMED, {confirmed} claims "
        f"CONFIRMED and emailed, {tasks} tasks run, {len(bad)} failed requests"
    )
    print(
        f"{'ms CPU per ticket':20}"
        + "".join(f"{p:>10}" for p in PROCESSES)
        + f"{'total':>10}"
        + "   Postgres / Redis round trips"
    )
    totals = dict.fromkeys(PROCESSES, 0.0)
    for step in STEPS:
        row = [meter.cpu[step, p] / n for p in PROCESSES]
        for p, value in zip(PROCESSES, row, strict=True):
            totals[p] += value
        print(
            f"{step:20}"
            + "".join(f"{v:10.2f}" for v in row)
            + f"{sum(row):10.2f}"
            + f"   {meter.trips[step, 'Postgres'] / n:6.2f} / {meter.trips[step, 'Redis'] / n:.2f}"
        )
    print(
        f"{'ticket':20}"
        + "".join(f"{totals[p]:10.2f}" for p in PROCESSES)
        + f"{sum(totals.values()):10.2f}"
    )
    for step in ("claim", "payment start", "webhook"):
        print(f"  {step} web p50 {statistics.median(meter.samples[step]):.2f} ms")
    print(f"(load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)")
    for step, profile in (meter.profiles or {}).items():
        print(f"--- {step}")
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
    for failure in bad[:5]:
        print("failed:", failure)
    return 0 if not bad and paid == n else 1


if __name__ == "__main__":
    sys.exit(main())
