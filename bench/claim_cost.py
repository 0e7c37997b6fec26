"""What one claim costs inside the web process, without HTTP: Postgres round
trips, Redis round trips and CPU, per ``claim_create`` call.

    DATABASE_URL=... REDIS_URL=... python bench/claim_cost.py [--claims 1000]

Prepares a sale as claims_bench.py does (admitted customers, one tier with
as many tickets), then claims one ticket for each customer, one at a time,
in this process (run it from the checkout's directory). Round trips are
counted at the client (bench/roundtrips.py), so they do not depend on how
busy the machine is; CPU is this thread's
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
    from bench.claims_bench import prepare_sale
    from bench.roundtrips import RoundTrips
    from claims.services import claim_create
    from customers.tokens import customer_token_verify

    sale = prepare_sale(customers=args.claims, tickets=args.claims)
    cpu: list[float] = []
    made = 0
    with RoundTrips() as counted:
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
        f"{made} claims, one at a time: per claim {counted.postgres / made:.2f} Postgres "
        f"and {counted.redis / made:.2f} Redis round trips; CPU in this process "
        f"p50 {1e6 * statistics.median(cpu):.0f} us, mean {1e6 * statistics.fmean(cpu):.0f} us "
        f"(load average {os.getloadavg()[0]:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
