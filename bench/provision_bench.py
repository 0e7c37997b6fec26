"""How long saving a tier takes while its ticket rows are made: a new tier of
the largest inventory allowed (events.domain.MAX_TIER_INVENTORY), the same
tier grown from half, and shrunk back to one ticket.

    DATABASE_URL=... REDIS_URL=... .venv/bin/python bench/provision_bench.py [--rounds 3]

Prints the median seconds of each, and the rows per second of the first
(the figure behind events.domain.TICKETS_PROVISIONED_PER_SECOND). The event,
its tiers and their rows are deleted afterwards.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.queue_setup import django_setup


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    django_setup()
    from django.utils import timezone

    from events.domain import MAX_TIER_INVENTORY
    from events.models import Event, Organizer
    from events.services import tier_create, tier_update

    organizer, _ = Organizer.objects.get_or_create(name="Benchmark organizer")
    now = timezone.now()
    event = Event.objects.create(
        organizer=organizer,
        name=f"Provisioning {uuid.uuid4().hex[:8]}",
        sale_start=now,
        sale_end=now + timezone.timedelta(days=1),
    )
    created, grown, shrunk = [], [], []
    try:
        for i in range(args.rounds):
            started = time.perf_counter()
            tier = tier_create(event=event, name=f"T{i}", price=100, inventory=MAX_TIER_INVENTORY)
            created.append(time.perf_counter() - started)
            tier_update(tier_id=tier.pk, name=f"T{i}", price=100, inventory=MAX_TIER_INVENTORY // 2)
            started = time.perf_counter()
            tier_update(tier_id=tier.pk, name=f"T{i}", price=100, inventory=MAX_TIER_INVENTORY)
            grown.append(time.perf_counter() - started)
            started = time.perf_counter()
            tier_update(tier_id=tier.pk, name=f"T{i}", price=100, inventory=1)
            shrunk.append(time.perf_counter() - started)
    finally:
        event.delete()
    made = statistics.median(created)
    print(f"new tier of {MAX_TIER_INVENTORY:,} tickets: {made:.2f} s")
    print(f"grown from {MAX_TIER_INVENTORY // 2:,}: {statistics.median(grown):.2f} s")
    print(f"shrunk to 1: {statistics.median(shrunk):.2f} s")
    print(f"rows made per second: {MAX_TIER_INVENTORY / made:,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
