"""Redis holds only what Postgres can rebuild (invariant 2): once a sale is
quiet and a reconciliation tick has run, the tier counters, the waiting line
(members and order) and the admitted set in Redis are exactly what Postgres
says. Under load they lag by up to a tick, so this is a settled check."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import zip_longest

from console.invariants.base import Found, Options, When, check, plural
from events.domain import LIVE_STATUSES
from events.models import Event
from fairqueue.redis import RedisUnavailable
from inventory.selectors import free_tickets_by_tier
from inventory.store import inventory_store
from queueing.domain import QueueStatus
from queueing.models import QueueEntry
from queueing.store import REBUILD_BATCH, queue_store

# Admission writes the expiry in ms from Python, a rebuild from Postgres'
# epoch: the two may round 1 ms apart.
ADMITTED_SCORE_TOLERANCE_MS = 1


@check(invariant=2, when=When.SETTLED, uses_redis=True)
def redis_agrees(event: Event, options: Options) -> Found:
    """Tier counters = free tickets - reservations in flight; the waiting set
    = the WAITING entries with their scores, in the same order; the admitted
    set = the ADMITTED entries (score = their window's end)."""
    try:
        problems, parts = [], []
        if event.status in LIVE_STATUSES:
            counters = _counters(event)
            problems += counters.problems
            parts.append(counters.summary)
        for found in (_waiting(event), _admitted(event)):
            problems += found.problems
            parts.append(found.summary)
    except RedisUnavailable:
        return Found(["Redis is unavailable: cannot compare"], "")
    return Found(problems, "; ".join(parts))


def _counters(event: Event) -> Found:
    free = {str(tier): n for tier, n in free_tickets_by_tier(event_id=event.pk).items()}
    names = {str(tier): name for tier, name in event.tiers.values_list("id", "name")}
    redis = inventory_store().tier_snapshot(event_id=event.pk, tier_ids=free)
    problems, parts = [], []
    for tier_id in (t for t in names if t in redis):  # in the tiers' display order
        snapshot = redis[tier_id]
        name, expected = names.get(tier_id, tier_id), free[tier_id] - snapshot.in_flight
        parts.append(f"{name} {snapshot.counter}")
        if snapshot.counter != expected:
            problems.append(
                f"{name}: counter {snapshot.counter} != {free[tier_id]} free in Postgres "
                f"- {snapshot.in_flight} in flight"
            )
    return Found(problems, "counters " + (", ".join(parts) or "none"))


def _waiting(event: Event) -> Found:
    """Walk the Postgres line and the Redis set side by side, page by page:
    same members, same scores, same order (ties by customer id, as Redis
    orders equal scores by member)."""
    store = queue_store()
    key = store.waiting_key(event.pk)
    in_postgres = (
        QueueEntry.objects.filter(event_id=event.pk, status=QueueStatus.WAITING)
        .order_by("score", "customer_id")
        .values_list("customer_id", "score")
        .iterator(chunk_size=REBUILD_BATCH)
    )
    first_difference = next(
        (
            (position, expected, found)
            for position, (expected, found) in enumerate(
                zip_longest(((str(c), int(score)) for c, score in in_postgres), _pages(key))
            )
            if expected != found
        ),
        None,
    )
    waiting = QueueEntry.objects.filter(event_id=event.pk, status=QueueStatus.WAITING).count()
    if first_difference is None:
        return Found([], f"waiting line {waiting} in order")
    at, expected, found = first_difference
    return Found(
        [
            f"waiting line differs from position {at + 1}: Postgres has {_entry(expected)}, "
            f"Redis {_entry(found)} ({waiting} WAITING in Postgres)"
        ],
        "",
    )


def _admitted(event: Event) -> Found:
    """The admitted set is small (at most ``max_active_admitted``)."""
    store = queue_store()
    expected = {
        str(customer): int(expires.timestamp() * 1000)
        for customer, expires in QueueEntry.objects.filter(
            event_id=event.pk, status=QueueStatus.ADMITTED
        ).values_list("customer_id", "admission_expires_at")
        if expires is not None  # an ADMITTED entry always has its window's end
    }
    found = dict(_pages(store.admitted_key(event.pk)))
    missing = expected.keys() - found.keys()
    extra = found.keys() - expected.keys()
    off = [
        c
        for c in expected.keys() & found.keys()
        if abs(expected[c] - found[c]) > ADMITTED_SCORE_TOLERANCE_MS
    ]
    problems = []
    if missing:
        entries = plural(len(missing), "ADMITTED entry", "ADMITTED entries")
        problems.append(f"{entries} missing from the admitted set")
    if extra:
        problems.append(f"{plural(len(extra), 'member')} of the admitted set not ADMITTED")
    if off:
        problems.append(f"{plural(len(off), 'admitted member')} with another window end")
    return Found(problems, f"admitted {len(expected)}")


def _pages(key: str) -> Iterator[tuple[str, int]]:
    store, start = queue_store(), 0
    while page := store.members_page(key=key, start=start, count=REBUILD_BATCH):
        yield from page
        start += len(page)


def _entry(member: tuple[str, int] | None) -> str:
    return "nothing" if member is None else f"{member[0]} (score {member[1]})"
