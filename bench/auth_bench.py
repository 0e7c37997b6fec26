"""What signing tokens out costs an API request: the customer-token check
with and without the sign-out state (customers/revocation.py), in process.

    DATABASE_URL=... REDIS_URL=... .venv/bin/python bench/auth_bench.py [--calls 20000]

Prints microseconds per check for: the JWT alone (before sign-out existed),
the JWT plus the Redis HMGET (the hot path), and the JWT plus the Postgres
read (Redis down or the state not cached: the fallback).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.queue_setup import django_setup


def per_call_us(fn: Callable[[], object], calls: int, rounds: int = 5) -> float:
    """Median over ``rounds`` of the mean time per call, in microseconds."""
    results = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(calls):
            fn()
        results.append((time.perf_counter() - started) / calls * 1e6)
    return statistics.median(results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args()
    django_setup()
    import redis

    from customers import revocation
    from customers.models import Customer
    from customers.revocation import AuthStateStore, customer_token_authenticate
    from customers.tokens import customer_token_issue, customer_token_verify

    customer = Customer.objects.create(email=f"auth-bench-{uuid.uuid4().hex[:12]}@bench.invalid")
    token, _ = customer_token_issue(customer_id=customer.id, email=customer.email)
    try:
        customer_token_authenticate(token)  # fills the cache
        jwt_only = per_call_us(lambda: customer_token_verify(token), args.calls)
        cached = per_call_us(lambda: customer_token_authenticate(token), args.calls)
        dead = redis.Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.05)
        live, revocation._store = revocation._store, AuthStateStore(client=dead)
        try:
            fallback = per_call_us(lambda: customer_token_authenticate(token), args.calls // 10)
        finally:
            revocation._store = live
    finally:
        customer.delete()
    print(f"customer token check, per call ({args.calls} calls, median of 5 rounds):")
    print(f"  JWT only (no sign-out)                 {jwt_only:8.1f} us")
    print(f"  JWT + Redis HMGET (hot path)           {cached:8.1f} us  (+{cached - jwt_only:.1f})")
    print(f"  JWT + Postgres (Redis down, fallback)  {fallback:8.1f} us  (includes the failed")
    print("    connect to a closed port each call)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
