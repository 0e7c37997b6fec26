"""What one claim costs inside the web process, without HTTP: Postgres round
trips, Redis round trips and CPU, per ``claim_create`` call.

    DATABASE_URL=... REDIS_URL=... python bench/claim_cost.py [--claims 1000]

Prepares a sale as claims_bench.py does (admitted customers, one tier with
as many tickets), then claims one ticket for each customer, one at a time,
in this process (run it from the checkout's directory). Round trips are
counted at the client (one per statement sent to Postgres, two per
transaction for BEGIN and COMMIT, one per packet written to Redis, a pipeline
or script being one), so they do not depend on how busy the machine is; CPU is this thread's
(``time.thread_time``), which a busy machine inflates. To compare two
versions, run each checkout's copy from its own directory, one after the other.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=1000)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    from bench.production_env import production_env

    production_env(os.environ)
    import django

    django.setup()
    import redis.connection
    from django.db import connection, connections

    from bench.claims_bench import prepare_sale
    from claims.services import claim_create
    from customers.tokens import customer_token_verify

    sale = prepare_sale(customers=args.claims, tickets=args.claims)
    counts = {"postgres": 0, "redis": 0}
    # BEGIN and COMMIT (or ROLLBACK) are round trips of their own, sent by
    # psycopg, not through execute(): two per transaction.
    wrapper = type(connections["default"])
    commit, rollback = wrapper.commit, wrapper.rollback

    def counted_commit(self):
        counts["postgres"] += 2
        return commit(self)

    def counted_rollback(self):
        counts["postgres"] += 2
        return rollback(self)

    wrapper.commit = counted_commit  # type: ignore[method-assign]
    wrapper.rollback = counted_rollback  # type: ignore[method-assign]

    def count_pg(execute, sql, params, many, context):
        counts["postgres"] += 1
        return execute(sql, params, many, context)

    send = redis.connection.AbstractConnection.send_packed_command

    def count_redis(self, command, check_health=True):
        counts["redis"] += 1
        return send(self, command, check_health)

    redis.connection.AbstractConnection.send_packed_command = count_redis  # type: ignore[method-assign]
    cpu: list[float] = []
    made = 0
    with connection.execute_wrapper(count_pg):
        for bearer, admission in sale["buyers"]:
            customer = customer_token_verify(bearer).id
            started = time.thread_time()
            claim_create(
                event_id=sale["event_id"],
                customer_id=customer,
                admission_token=admission,
                tier_id=sale["tier_id"],
                quantity=1,
            )
            cpu.append(time.thread_time() - started)
            made += 1
    print(f"code: {Path(sys.modules[claim_create.__module__].__file__).parent}")
    print(
        f"{made} claims, one at a time: per claim {counts['postgres'] / made:.2f} Postgres "
        f"and {counts['redis'] / made:.2f} Redis round trips; CPU in this process "
        f"p50 {1e6 * statistics.median(cpu):.0f} us, mean {1e6 * statistics.fmean(cpu):.0f} us "
        f"(load average {os.getloadavg()[0]:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
