"""What one hot request costs inside a web worker, HTTP server left out: a
join, a position read and a claim sent through the whole Django stack
(``config.wsgi.application``: middleware, URL resolver, DRF view, our code,
the response), one at a time, in this process.

    DATABASE_URL=... REDIS_URL=... python bench/request_cost.py [--requests 2000]

Per request it prints the CPU of this thread (``time.thread_time``: a busy
machine inflates it) and the Postgres and Redis round trips (counted at the
client, so they do not depend on the load; see bench/claim_cost.py for how).
The difference to the server CPU per request that claims_bench.py and
queue_bench.py report is the HTTP server's share. Joins are measured twice:
with the customer's sign-out state cached in Redis (by an earlier request of
theirs, or by signing in), and cold (a wiped Redis, or tokens minted outside
the sign-in). The framework's floor (bench/floor_urls.py: a join's INSERT +
ZADD, one ZRANK, in plain Django views) is measured the same way, for the
join and the read to be read against. ``--profile``
prints cProfile's top functions per kind instead, in this thread's CPU time
(``time.thread_time_ns``: the time the thread waits on Postgres, Redis or
another thread is left out, as in the figures). Run it from the checkout
whose code you want to measure; it adds an event and customers to the
database (use a throwaway one).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# The product's settings with the floor's views mounted (bench/floor_settings.py).
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.floor_settings")

from bench.queue_setup import django_setup, make_customers, make_event, tokens_for
from bench.roundtrips import RoundTrips

HOST = "127.0.0.1"


def environ(method: str, path: str, token: str, body: bytes = b"") -> dict:
    return {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": HOST,
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "REMOTE_ADDR": HOST,
        "HTTP_HOST": f"{HOST}:8000",
        "HTTP_AUTHORIZATION": f"Bearer {token}",
        "CONTENT_LENGTH": str(len(body)),
        "CONTENT_TYPE": "application/json",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000, help="of each kind")
    parser.add_argument("--profile", action="store_true", help="cProfile instead of figures")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", HOST)
    django_setup()
    import json

    from bench.claims_bench import prepare_sale
    from config.wsgi import application

    statuses: Counter = Counter()

    def send(env: dict) -> None:
        def start_response(status: str, headers: list, exc_info: object = None) -> None:
            statuses[status] += 1

        answer = application(env, start_response)
        b"".join(answer)
        answer.close()

    n = args.requests
    event = make_event("request cost", tickets=10, batch=10)
    # As after the event's first tick: the line marker and the served counter
    # in Redis (without them joins and reads answer from Postgres).
    from queueing.services import queue_rebuild

    queue_rebuild(event_id=event)
    queue = f"/api/v1/events/{event}/queue/"
    warm = make_customers(f"rc{uuid.uuid4().hex[:6]}", n)
    cold = make_customers(f"rc{uuid.uuid4().hex[:6]}", n)
    warm_tokens, cold_tokens = tokens_for(warm), tokens_for(cold)
    for token in warm_tokens:  # signed in a while ago: an earlier request cached the state
        send(environ("GET", "/api/v1/auth/me/", token))
    sale = prepare_sale(customers=n, tickets=n)
    claims = f"/api/v1/events/{sale['event_id']}/claims/"

    def claim(bearer_admission: tuple[str, str]) -> dict:
        bearer, admission = bearer_admission
        body = {"admission_token": admission, "tier_id": sale["tier_id"], "quantity": 1}
        return environ("POST", claims, bearer, json.dumps(body).encode())

    floor = f"/api/v1/floor/{make_event('request cost floor', tickets=1, batch=1)}/join/"
    floor_read = f"/api/v1/floor/{event}/position/"  # the floor's customer is its bearer

    kinds: list[tuple[str, list, Callable[[object], dict]]] = [
        ("join (sign-out state cached)", warm_tokens, lambda t: environ("POST", queue, t)),
        ("join (sign-out state cold)", cold_tokens, lambda t: environ("POST", queue, t)),
        ("floor join (INSERT + ZADD)", [c for c, _ in warm], lambda c: environ("POST", floor, c)),
        ("position read", warm_tokens, lambda t: environ("GET", f"{queue}position/", t)),
        ("floor read (ZRANK)", [c for c, _ in warm], lambda c: environ("GET", floor_read, c)),
        ("claim", sale["buyers"], claim),
    ]
    counter = RoundTrips()
    with counter:
        for name, items, build in kinds:
            envs = [build(item) for item in items]
            counter.reset()
            profile = cProfile.Profile(time.thread_time_ns, 1e-9) if args.profile else None
            cpu = []
            for env in envs:
                if profile:
                    profile.enable()
                started = time.thread_time()
                send(env)
                cpu.append(time.thread_time() - started)
                if profile:
                    profile.disable()
            if profile:
                print(f"--- {name}")
                pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
                continue
            print(
                f"{name:30} CPU p50 {1e6 * statistics.median(cpu):5.0f} us, "
                f"mean {1e6 * statistics.fmean(cpu):5.0f} us; round trips per request: "
                f"Postgres {counter.postgres / len(envs):.2f}, "
                f"Redis {counter.redis / len(envs):.2f}"
            )
    print(f"answers: {dict(statuses)} (load average {os.getloadavg()[0]:.1f})")
    return 0 if set(statuses) <= {"200 OK", "201 Created"} else 1


if __name__ == "__main__":
    sys.exit(main())
