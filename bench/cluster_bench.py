"""What the Redis Cluster client costs the hot path: the queue store's join
and position scripts, one Redis against a 3-master cluster, in process.

    DJANGO_DEBUG=true DATABASE_URL=postgres://unused@127.0.0.1:1/unused \\
        REDIS_URL=redis://127.0.0.1:1/0 .venv/bin/python bench/cluster_bench.py [--calls 20000]

Starts an embedded Redis and an embedded 3-master Redis Cluster (the
devstack's, from the same redis-server binary) in a temporary directory, and
prints, for each: microseconds per call (wall) and the client's CPU per call,
for a join (Lua, 4 keys), a position read (Lua, 4 keys) and the rebuild's
pipelined ZADD of 200,000 members. No Postgres is used.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def per_call(fn: Callable[[int], object], calls: int, rounds: int = 5) -> tuple[float, float]:
    """Median over ``rounds`` of (wall µs, client CPU µs) per call."""
    walls, cpus = [], []
    for r in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(calls):
            fn(r * calls + i)
        walls.append((time.perf_counter() - wall) / calls * 1e6)
        cpus.append((time.process_time() - cpu) / calls * 1e6)
    return statistics.median(walls), statistics.median(cpus)


def measure(store, calls: int) -> tuple[tuple[float, float], tuple[float, float], float]:
    """(join, position) per call, and the seconds of a 200,000-member rebuild."""
    event = uuid.uuid4()
    members = [str(uuid.uuid4()) for _ in range(calls * 5)]
    joined = per_call(lambda i: store.join(event_id=event, customer_id=members[i], score=i), calls)
    read = per_call(lambda i: store.position(event_id=event, customer_id=members[i]), calls)
    started = time.perf_counter()
    store.add_many(
        key=store.waiting_key(uuid.uuid4()),
        members=((str(uuid.uuid4()), n) for n in range(200_000)),
    )
    return joined, read, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args()

    import django

    django.setup()
    from devtools import devstack
    from devtools.devstack.cluster import RedisClusterServer
    from fairqueue.redis import make_client, make_cluster_client
    from queueing.store import QueueStore

    base = Path(tempfile.mkdtemp(prefix="fq-cluster-bench-"))
    single = devstack.Redis(base / "single", base / "single.log")
    single.prepare()
    single.port = devstack.free_port()
    proc = devstack.spawn(single.argv(single.port), env={}, stdout=open(os.devnull, "wb"))  # noqa: SIM115
    cluster = RedisClusterServer(base / "cluster")
    try:
        cluster.start()
        while not single.is_ready():
            time.sleep(0.05)
        clients = {
            "one Redis": make_client(single.url()),
            "3-master cluster": make_cluster_client(cluster.url),
        }
        print(f"{'':18} {'join µs (CPU)':>16} {'position µs (CPU)':>18} {'rebuild 200k s':>15}")
        for name, client in clients.items():
            joined, read, rebuild = measure(QueueStore(client=client), args.calls)
            print(
                f"{name:18} {joined[0]:8.1f} ({joined[1]:5.1f}) "
                f"{read[0]:10.1f} ({read[1]:5.1f}) {rebuild:15.2f}"
            )
            client.close()
    finally:
        cluster.stop()
        proc.kill()
        proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
