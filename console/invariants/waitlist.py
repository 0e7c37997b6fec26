"""The waiting list, from Postgres: offers never stand for more tickets than
are free (invariant 1 reaching the list; once settled: a late payment's
re-instatement or a claim of several tickets from the line can take an
offered ticket until the next offer round withdraws that offer), and one
live entry per customer and event (invariant 6)."""

from __future__ import annotations

from console.invariants.base import Found, Options, When, check, plural, rows
from events.models import Event, TicketTier
from inventory.models import Ticket
from queueing.domain import WAITLIST_LIVE_STATUSES, QueueStatus, WaitlistStatus
from queueing.models import QueueEntry, WaitlistEntry

TICKET = Ticket._meta.db_table
TIER = TicketTier._meta.db_table
QUEUE = QueueEntry._meta.db_table
WAITLIST = WaitlistEntry._meta.db_table
LIVE = [s.value for s in WAITLIST_LIVE_STATUSES]

# Per tier: the free tickets and the open offers (ADMITTED entries made by an offer).
_OFFERS_SQL = f"""
SELECT t.name,
  (SELECT COUNT(*) FROM {TICKET} k WHERE k.tier_id = t.id AND k.claim_id IS NULL
     AND NOT k.blocked),
  (SELECT COUNT(*) FROM {QUEUE} q WHERE q.offer_tier_id = t.id AND q.status = %s)
FROM {TIER} t WHERE t.event_id = %s ORDER BY t.sort_order, t.price, t.name
"""  # noqa: S608  (table names come from the models, values are parameters)

# Offered entries whose admission is not the one the offer made, or not an offer's.
_ORPHANS_SQL = f"""
SELECT COUNT(*) FROM {WAITLIST} w LEFT JOIN {QUEUE} q ON q.id = w.queue_entry_id
WHERE w.event_id = %s AND w.status = %s
  AND (q.id IS NULL OR q.customer_id <> w.customer_id OR q.offer_tier_id IS NULL)
"""  # noqa: S608

_DOUBLES_SQL = f"""
SELECT COUNT(*) FROM (SELECT customer_id FROM {WAITLIST}
  WHERE event_id = %s AND status = ANY(%s) GROUP BY customer_id HAVING COUNT(*) > 1) d
"""  # noqa: S608


@check(invariant=1, when=When.SETTLED)
def offers_within_free_tickets(event: Event, options: Options) -> Found:
    """Each tier's open waiting-list offers are at most its free tickets, and
    every OFFERED entry holds the admission its offer made."""
    problems, parts = [], []
    for name, free, offered in rows(_OFFERS_SQL, [QueueStatus.ADMITTED.value, event.pk]):
        parts.append(f"{name} {offered}/{free}")
        if offered > free:
            problems.append(f"{name}: {plural(offered, 'open offer')} > {free} free")
    orphans = rows(_ORPHANS_SQL, [event.pk, WaitlistStatus.OFFERED.value])[0][0]
    if orphans:
        entries = plural(orphans, "offered entry", "offered entries")
        problems.append(f"{entries} without its admission")
    return Found(problems, "offers/free: " + (", ".join(parts) or "no tiers"))


@check(invariant=6)
def waitlist_one_per_customer(event: Event, options: Options) -> Found:
    """At most one live (waiting or offered) waiting-list entry per customer."""
    doubles = rows(_DOUBLES_SQL, [event.pk, LIVE])[0][0]
    problems = [f"{plural(doubles, 'customer')} with two live entries"] if doubles else []
    return Found(problems, "one live entry per customer on the waiting list")
