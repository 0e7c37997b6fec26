"""The invariant check of a flash sale, read straight from Postgres (and,
optionally, Redis).

Every check takes a DB-API cursor (psycopg 3, or Django's
``connection.cursor()``), so the benchmark and the test suite run exactly the
same SQL. Table names are the Django defaults of the project's models.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

HOLDING = ("CLAIMED", "CONFIRMED")
LIVE_PAYMENT = ("INITIALIZING", "PENDING")


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    data: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        return f"  [{'PASS' if self.ok else 'FAIL'}] {self.name}: {self.detail}"


def _one(cur: Any, sql: str, params: list[Any]) -> Any:
    cur.execute(sql, params)
    return cur.fetchone()[0]


def _all(cur: Any, sql: str, params: list[Any]) -> list[tuple]:
    cur.execute(sql, params)
    return list(cur.fetchall())


def sold_equals_inventory(cur: Any, event_id: str) -> Check:
    inventory = _one(
        cur,
        "SELECT COALESCE(SUM(inventory), 0) FROM events_tickettier WHERE event_id = %s",
        [event_id],
    )
    sold_claims = _one(
        cur,
        "SELECT COALESCE(SUM(quantity), 0) FROM claims_claim "
        "WHERE event_id = %s AND status = 'CONFIRMED'",
        [event_id],
    )
    sold_rows = _one(
        cur,
        "SELECT COUNT(*) FROM events_ticket k JOIN claims_claim c ON c.id = k.claim_id "
        "WHERE c.event_id = %s AND c.status = 'CONFIRMED'",
        [event_id],
    )
    ok = int(inventory) == int(sold_claims) == int(sold_rows)
    return Check(
        "tickets sold = inventory",
        ok,
        f"inventory {inventory}, sold by claims {sold_claims}, sold ticket rows {sold_rows}",
        {"inventory": int(inventory), "sold": int(sold_claims)},
    )


def no_tier_over_inventory(cur: Any, event_id: str) -> Check:
    rows = _all(
        cur,
        """
        SELECT t.name, t.inventory,
          (SELECT COUNT(*) FROM events_ticket k WHERE k.tier_id = t.id),
          (SELECT COALESCE(SUM(c.quantity), 0) FROM claims_claim c
             WHERE c.tier_id = t.id AND c.status IN ('CLAIMED', 'CONFIRMED')),
          (SELECT COUNT(*) FROM events_ticket k JOIN claims_claim c ON c.id = k.claim_id
             WHERE k.tier_id = t.id AND c.status IN ('CLAIMED', 'CONFIRMED')),
          (SELECT COUNT(*) FROM events_ticket k JOIN claims_claim c ON c.id = k.claim_id
             WHERE k.tier_id = t.id AND c.status NOT IN ('CLAIMED', 'CONFIRMED')),
          (SELECT COUNT(*) FROM claims_claim c WHERE c.tier_id = t.id AND c.event_id <> t.event_id)
        FROM events_tickettier t WHERE t.event_id = %s ORDER BY t.name
        """,
        [event_id],
    )
    problems, parts = [], []
    for name, inventory, ticket_rows, held, held_rows, dead_rows, foreign in rows:
        parts.append(f"{name} {held}/{inventory}")
        if held > inventory:
            problems.append(f"{name}: {held} held > inventory {inventory}")
        if ticket_rows != inventory:
            problems.append(f"{name}: {ticket_rows} ticket rows != inventory {inventory}")
        if held_rows != held:
            problems.append(f"{name}: {held_rows} ticket rows held != {held} in claims")
        if dead_rows:
            problems.append(f"{name}: {dead_rows} tickets still on released claims")
        if foreign:
            problems.append(f"{name}: {foreign} claims of another event")
    # A holding claim whose ticket rows do not add up to its quantity.
    mismatched = _one(
        cur,
        """
        SELECT COUNT(*) FROM claims_claim c
        WHERE c.event_id = %s AND c.status IN ('CLAIMED', 'CONFIRMED')
          AND c.quantity <> (SELECT COUNT(*) FROM events_ticket k WHERE k.claim_id = c.id)
        """,
        [event_id],
    )
    if mismatched:
        problems.append(f"{mismatched} holding claims whose ticket rows != quantity")
    return Check(
        "no tier over its inventory",
        not problems,
        "; ".join(problems) if problems else "held/inventory: " + ", ".join(parts),
    )


def one_purchase_per_customer(cur: Any, event_id: str) -> Check:
    over = _all(
        cur,
        """
        SELECT c.customer_id, COUNT(*), SUM(c.quantity) FROM claims_claim c
        WHERE c.event_id = %s AND c.status IN ('CLAIMED', 'CONFIRMED')
        GROUP BY c.customer_id
        HAVING COUNT(*) > 1
           OR SUM(c.quantity) > (SELECT max_tickets_per_customer FROM events_event WHERE id = %s)
        """,
        [event_id, event_id],
    )
    paid_twice = _one(
        cur,
        """
        SELECT COUNT(*) FROM (
          SELECT p.customer_id FROM payments_payment p JOIN claims_claim c ON c.id = p.claim_id
          WHERE c.event_id = %s AND p.status = 'CONFIRMED'
          GROUP BY p.customer_id HAVING COUNT(*) > 1) x
        """,
        [event_id],
    )
    buyers = _one(
        cur,
        "SELECT COUNT(DISTINCT customer_id) FROM claims_claim "
        "WHERE event_id = %s AND status = 'CONFIRMED'",
        [event_id],
    )
    ok = not over and not paid_twice
    detail = (
        f"{buyers} buyers; {len(over)} customers holding more than allowed, "
        f"{paid_twice} with two confirmed payments"
    )
    return Check("no customer with two purchases", ok, detail)


def payments_match_claims(cur: Any, event_id: str) -> Check:
    paid_not_confirmed = _one(
        cur,
        "SELECT COUNT(*) FROM payments_payment p JOIN claims_claim c ON c.id = p.claim_id "
        "WHERE c.event_id = %s AND p.status = 'CONFIRMED' AND c.status <> 'CONFIRMED'",
        [event_id],
    )
    confirmed_not_paid = _one(
        cur,
        """
        SELECT COUNT(*) FROM claims_claim c
        WHERE c.event_id = %s AND c.status = 'CONFIRMED'
          AND (SELECT COUNT(*) FROM payments_payment p
               WHERE p.claim_id = c.id AND p.status = 'CONFIRMED') <> 1
        """,
        [event_id],
    )
    # The append-only event log: every webhook (duplicates included) is
    # recorded, but no payment may be moved to CONFIRMED twice.
    twice = _one(
        cur,
        """
        SELECT COUNT(*) FROM (
          SELECT e.payment_id FROM payments_paymentevent e
          JOIN payments_payment p ON p.id = e.payment_id
          JOIN claims_claim c ON c.id = p.claim_id
          WHERE c.event_id = %s AND e.kind = 'state_change' AND e.to_status = 'CONFIRMED'
          GROUP BY e.payment_id HAVING COUNT(*) > 1) x
        """,
        [event_id],
    )
    webhooks = _one(
        cur,
        "SELECT COUNT(*) FROM payments_paymentevent e JOIN payments_payment p "
        "ON p.id = e.payment_id JOIN claims_claim c ON c.id = p.claim_id "
        "WHERE c.event_id = %s AND e.kind = 'webhook_received'",
        [event_id],
    )
    ok = not paid_not_confirmed and not confirmed_not_paid and not twice
    return Check(
        "CONFIRMED payments <-> CONFIRMED claims",
        ok,
        f"{paid_not_confirmed} confirmed payments whose claim is not confirmed, "
        f"{confirmed_not_paid} confirmed claims without exactly one confirmed payment, "
        f"{twice} payments confirmed twice in the event log ({webhooks} webhooks received)",
    )


def no_payment_in_flight(cur: Any, event_id: str) -> Check:
    rows = _all(
        cur,
        "SELECT p.status, COUNT(*) FROM payments_payment p "
        "JOIN claims_claim c ON c.id = p.claim_id "
        "WHERE c.event_id = %s AND p.status IN ('INITIALIZING', 'PENDING') GROUP BY p.status",
        [event_id],
    )
    counts = dict(rows)
    return Check(
        "no payment left INITIALIZING/PENDING",
        not counts,
        ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none",
    )


def no_admission_past_window(cur: Any, event_id: str, grace_seconds: float = 0.0) -> Check:
    late = _one(
        cur,
        "SELECT COUNT(*) FROM queueing_queueentry WHERE event_id = %s AND status = 'ADMITTED' "
        "AND admission_expires_at < now() - make_interval(secs => %s)",
        [event_id, float(grace_seconds)],
    )
    return Check(
        "no queue entry ADMITTED past its window",
        not late,
        f"{late} entries ADMITTED more than {grace_seconds:g} s past their window",
    )


def status_counts(cur: Any, event_id: str) -> dict[str, dict[str, int]]:
    """Claims, payments and queue entries of the event, by status (report)."""
    claims = dict(
        _all(
            cur,
            "SELECT status, COUNT(*) FROM claims_claim WHERE event_id = %s GROUP BY 1",
            [event_id],
        )
    )
    payments = dict(
        _all(
            cur,
            "SELECT p.status, COUNT(*) FROM payments_payment p JOIN claims_claim c "
            "ON c.id = p.claim_id WHERE c.event_id = %s GROUP BY 1",
            [event_id],
        )
    )
    queue = dict(
        _all(
            cur,
            "SELECT status, COUNT(*) FROM queueing_queueentry WHERE event_id = %s GROUP BY 1",
            [event_id],
        )
    )
    return {"claims": claims, "payments": payments, "queue": queue}


def redis_matches_postgres(cur: Any, redis_client: Any, event_id: str) -> Check:
    """Invariant 2 at rest: tier counters = free tickets in Postgres minus
    reservations in flight; waiting and admitted sets the size of their
    Postgres rows. Key names: the project's ``fq:{<event>}:...`` layout."""
    tag = f"fq:{{{event_id}}}"
    problems, parts = [], []
    for tier_id, name, free in _all(
        cur,
        """
        SELECT t.id, t.name, (SELECT COUNT(*) FROM events_ticket k
                              WHERE k.tier_id = t.id AND k.claim_id IS NULL)
        FROM events_tickettier t WHERE t.event_id = %s ORDER BY t.name
        """,
        [event_id],
    ):
        counter = redis_client.get(f"{tag}:tier:{tier_id}:available")
        inflight = sum(
            int(m.rsplit(":", 1)[1])
            for m in redis_client.zrange(f"{tag}:tier:{tier_id}:inflight", 0, -1)
        )
        parts.append(f"{name} redis {counter} / postgres {free}")
        if counter is None or int(counter) != free - inflight:
            problems.append(
                f"{name}: redis {counter} != postgres free {free} - in flight {inflight}"
            )
    waiting = _one(
        cur,
        "SELECT COUNT(*) FROM queueing_queueentry WHERE event_id = %s AND status = 'WAITING'",
        [event_id],
    )
    admitted = _one(
        cur,
        "SELECT COUNT(*) FROM queueing_queueentry WHERE event_id = %s AND status = 'ADMITTED'",
        [event_id],
    )
    z_waiting = redis_client.zcard(f"{tag}:queue:waiting")
    z_admitted = redis_client.zcard(f"{tag}:queue:admitted")
    parts.append(f"waiting redis {z_waiting} / postgres {waiting}")
    parts.append(f"admitted redis {z_admitted} / postgres {admitted}")
    if z_waiting != waiting:
        problems.append(f"waiting set {z_waiting} != {waiting} WAITING rows")
    if z_admitted != admitted:
        problems.append(f"admitted set {z_admitted} != {admitted} ADMITTED rows")
    return Check("Redis rebuilt = Postgres", not problems, "; ".join(problems) or ", ".join(parts))


def settled(cur: Any, event_id: str) -> bool:
    """Reconciliation has caught up: nothing in flight, nobody over-admitted."""
    return no_payment_in_flight(cur, event_id).ok and no_admission_past_window(cur, event_id).ok


def wait_until(predicate: Callable[[], bool], *, timeout: float, interval: float = 1.0) -> float:
    """Seconds it took ``predicate`` to hold, or -1 if it never did in time."""
    started = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - started
        if time.monotonic() - started >= timeout:
            return -1.0
        time.sleep(interval)


def check_all(
    cur: Any,
    event_id: str,
    *,
    admitted_grace_seconds: float = 0.0,
    expect_sold_out: bool = True,
    redis_client: Any = None,
) -> list[Check]:
    checks = []
    if expect_sold_out:
        checks.append(sold_equals_inventory(cur, event_id))
    checks += [
        no_tier_over_inventory(cur, event_id),
        one_purchase_per_customer(cur, event_id),
        payments_match_claims(cur, event_id),
        no_payment_in_flight(cur, event_id),
        no_admission_past_window(cur, event_id, admitted_grace_seconds),
    ]
    if redis_client is not None:
        checks.append(redis_matches_postgres(cur, redis_client, event_id))
    return checks
