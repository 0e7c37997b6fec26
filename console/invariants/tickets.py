"""Tickets, claims and the waiting line, from Postgres: invariants 1, 3, 4 and 6,
and the deadlines beat must have caught up with once a sale is quiet."""

from __future__ import annotations

from datetime import timedelta

from claims.domain import HOLDING_STATUSES, ClaimStatus
from claims.models import Claim
from console.invariants.base import Found, Options, When, check, plural, rows, value
from events.domain import EventStatus
from events.models import Event, TicketTier
from inventory.models import Ticket
from payments.domain import PaymentStatus
from payments.models import Payment
from queueing.domain import QueueStatus
from queueing.models import QueueEntry

TICKET = Ticket._meta.db_table
TIER = TicketTier._meta.db_table
CLAIM = Claim._meta.db_table
PAYMENT = Payment._meta.db_table
HOLDING = [s.value for s in HOLDING_STATUSES]

# Per tier: inventory, ticket rows, rows taken by a claim, tickets the
# holding claims say they hold. A purchase holds ``quantity - moved`` tickets
# (``moved``: resold or transferred away); a ticket it returned for resale is
# still its own, but its row is on sale (free, or held by the buyer's claim,
# which counts it too), so such rows are counted once, for sale.
_TIERS_SQL = f"""
SELECT t.name, t.inventory,
  (SELECT COUNT(*) FROM {TICKET} k WHERE k.tier_id = t.id),
  (SELECT COUNT(*) FROM {TICKET} k WHERE k.tier_id = t.id AND k.claim_id IS NOT NULL),
  (SELECT COALESCE(SUM(c.quantity - c.moved), 0) FROM {CLAIM} c
     WHERE c.tier_id = t.id AND c.status = ANY(%s))
  - (SELECT COUNT(*) FROM {TICKET} k JOIN {CLAIM} c ON c.id = k.resale_from_id
     WHERE k.tier_id = t.id AND c.status = ANY(%s))
FROM {TIER} t WHERE t.event_id = %s ORDER BY t.sort_order, t.price, t.name
"""  # noqa: S608  (table names come from the models, values are parameters)


def _tiers(event: Event) -> list[tuple[str, int, int, int, int]]:
    return [
        (name, int(inventory), int(ticket_rows), int(taken), int(held))
        for name, inventory, ticket_rows, taken, held in rows(
            _TIERS_SQL, [HOLDING, HOLDING, event.pk]
        )
    ]


@check(invariant=1)
def tickets_within_inventory(event: Event, options: Options) -> Found:
    """Each tier has exactly ``inventory`` ticket rows, and its CLAIMED and
    CONFIRMED claims hold no more tickets than that."""
    problems, parts = [], []
    for name, inventory, ticket_rows, _taken, held in _tiers(event):
        parts.append(f"{name} {held}/{inventory}")
        if held > inventory:
            problems.append(f"{name}: claims hold {held} tickets > inventory {inventory}")
        if ticket_rows != inventory:
            problems.append(f"{name}: {ticket_rows} ticket rows != inventory {inventory}")
    return Found(problems, "held/inventory: " + (", ".join(parts) or "no tiers"))


@check(invariant=1)
def claims_hold_their_tickets(event: Event, options: Options) -> Found:
    """Every CLAIMED or CONFIRMED claim holds exactly ``quantity - moved``
    ticket rows (its returns on resale included), all of its own tier, and
    its tier belongs to its event; on reserved seating, exactly the seats it
    names, none of them blocked."""
    short = value(
        f"SELECT COUNT(*) FROM {CLAIM} c WHERE c.event_id = %s AND c.status = ANY(%s) "  # noqa: S608
        f"AND c.quantity - c.moved <> (SELECT COUNT(*) FROM {TICKET} k WHERE k.claim_id = c.id "
        "OR k.resale_from_id = c.id)",
        [event.pk, HOLDING],
    )
    wrong_tier = value(
        f"SELECT COUNT(*) FROM {TICKET} k JOIN {CLAIM} c ON c.id = k.claim_id "  # noqa: S608
        "WHERE c.event_id = %s AND k.tier_id <> c.tier_id",
        [event.pk],
    )
    foreign = value(
        f"SELECT COUNT(*) FROM {CLAIM} c JOIN {TIER} t ON t.id = c.tier_id "  # noqa: S608
        "WHERE c.event_id = %s AND t.event_id <> c.event_id",
        [event.pk],
    )
    wrong_seats = value(
        f"SELECT COUNT(*) FROM {CLAIM} c, LATERAL (SELECT ARRAY(SELECT k.label::text "  # noqa: S608
        f"FROM {TICKET} k WHERE k.claim_id = c.id OR k.resale_from_id = c.id) AS labels) held "
        "WHERE c.event_id = %s AND c.status = ANY(%s) AND cardinality(c.seats) > 0 "
        "AND NOT (c.seats::text[] <@ held.labels AND c.seats::text[] @> held.labels)",
        [event.pk, HOLDING],
    )
    blocked_held = value(
        f"SELECT COUNT(*) FROM {TICKET} k JOIN {CLAIM} c ON c.id = k.claim_id "  # noqa: S608
        "WHERE c.event_id = %s AND k.blocked",
        [event.pk],
    )
    problems = []
    if short:
        problems.append(f"{plural(short, 'holding claim')} whose ticket rows != quantity")
    if wrong_tier:
        problems.append(f"{plural(wrong_tier, 'ticket row')} held by a claim of another tier")
    if foreign:
        problems.append(f"{plural(foreign, 'claim')} on a tier of another event")
    if wrong_seats:
        problems.append(f"{plural(wrong_seats, 'holding claim')} not holding the seats it names")
    if blocked_held:
        problems.append(f"{plural(blocked_held, 'blocked seat')} held by a claim")
    holding = Claim.objects.filter(event_id=event.pk, status__in=HOLDING).count()
    return Found(problems, f"{plural(holding, 'holding claim')}, each with its ticket rows")


@check(invariant=3)
def inventory_truth(event: Event, options: Options) -> Found:
    """Free ticket rows = inventory - tickets in CLAIMED and CONFIRMED claims."""
    problems, parts = [], []
    for name, inventory, ticket_rows, taken, held in _tiers(event):
        free = ticket_rows - taken
        parts.append(f"{name} {free} free")
        if free != inventory - held:
            problems.append(
                f"{name}: {free} free ticket rows != inventory {inventory} - {held} held"
            )
    return Found(problems, ", ".join(parts) or "no tiers")


@check(invariant=4)
def released_claims_hold_nothing(event: Event, options: Options) -> Found:
    """A released claim gave its tickets back: no ticket row points at it."""
    kept = value(
        f"SELECT COUNT(*) FROM {TICKET} k JOIN {CLAIM} c ON c.id = k.claim_id "  # noqa: S608
        "WHERE c.event_id = %s AND c.status <> ALL(%s)",
        [event.pk, HOLDING],
    )
    released = Claim.objects.filter(event_id=event.pk, status=ClaimStatus.RELEASED).count()
    problems = [f"{plural(kept, 'ticket row')} still held by released claims"] if kept else []
    return Found(problems, f"{plural(released, 'released claim')}, none holding a ticket")


@check(invariant=6)
def one_purchase_per_customer(event: Event, options: Options) -> Found:
    """One CLAIMED or CONFIRMED claim per customer, of at most
    ``max_tickets_per_customer`` tickets; one CONFIRMED payment per customer."""
    over = rows(
        f"SELECT customer_id, COUNT(*), SUM(quantity) FROM {CLAIM} "  # noqa: S608
        "WHERE event_id = %s AND status = ANY(%s) GROUP BY customer_id "
        "HAVING COUNT(*) > 1 OR SUM(quantity) > %s",
        [event.pk, HOLDING, event.max_tickets_per_customer],
    )
    paid_twice = value(
        f"SELECT COUNT(*) FROM (SELECT p.customer_id FROM {PAYMENT} p "  # noqa: S608
        f"JOIN {CLAIM} c ON c.id = p.claim_id WHERE c.event_id = %s AND p.status = %s "
        "GROUP BY p.customer_id HAVING COUNT(*) > 1) x",
        [event.pk, PaymentStatus.CONFIRMED.value],
    )
    problems = [
        f"customer {customer}: {plural(claims, 'holding claim')} of "
        f"{plural(tickets, 'ticket')} (max {event.max_tickets_per_customer})"
        for customer, claims, tickets in over[:5]
    ]
    if len(over) > 5:
        problems.append(f"and {len(over) - 5} more customers")
    if paid_twice:
        problems.append(f"{plural(paid_twice, 'customer')} with two confirmed payments")
    buyers = (
        Claim.objects.filter(event_id=event.pk, status=ClaimStatus.CONFIRMED)
        .values("customer_id")
        .distinct()
        .count()
    )
    return Found(problems, f"{plural(buyers, 'buyer')}, one purchase each", {"buyers": buyers})


# --- once a sale has settled -----------------------------------------------------------


@check(invariant=4, when=When.SETTLED)
def sold_out_means_none_free(event: Event, options: Options) -> Found:
    """A SOLD_OUT event has no free ticket: a released ticket puts the event
    back on sale (right after the release commits, or at the next
    reconciliation if that step was lost)."""
    free = value(
        f"SELECT COUNT(*) FROM {TICKET} k JOIN {TIER} t ON t.id = k.tier_id "  # noqa: S608
        "WHERE t.event_id = %s AND k.claim_id IS NULL AND NOT k.blocked",
        [event.pk],
    )
    event.refresh_from_db(fields=["status"])
    problems = []
    if event.status == EventStatus.SOLD_OUT and free:
        problems.append(f"the event is SOLD_OUT with {plural(free, 'free ticket')}")
    return Found(problems, f"{event.status} with {plural(free, 'free ticket')}")


@check(invariant=4, when=When.SETTLED)
def claims_expired_in_time(event: Event, options: Options) -> Found:
    """No unpaid CLAIMED claim past its expiry: expiry gave the tickets back
    (claims with a payment in flight wait for the gateway, invariant 5)."""
    late = Claim.objects.filter(
        event_id=event.pk,
        status=ClaimStatus.CLAIMED,
        payment_in_flight=False,
        expires_at__lt=options.now - timedelta(seconds=options.grace_seconds),
    ).count()
    problems = [f"{plural(late, 'unpaid claim')} CLAIMED past expiry"] if late else []
    return Found(problems, f"no unpaid claim past expiry (grace {options.grace_seconds:g} s)")


@check(invariant=4, when=When.SETTLED)
def admissions_expired_in_time(event: Event, options: Options) -> Found:
    """No queue entry ADMITTED past its window: the slot went to the next."""
    late = QueueEntry.objects.filter(
        event_id=event.pk,
        status=QueueStatus.ADMITTED,
        admission_expires_at__lt=options.now - timedelta(seconds=options.grace_seconds),
    ).count()
    entries = plural(late, "queue entry", "queue entries")
    problems = [f"{entries} ADMITTED past the window"] if late else []
    return Found(problems, f"no admission past its window (grace {options.grace_seconds:g} s)")


@check(invariant=1, when=When.SOLD_OUT)
def sold_equals_inventory(event: Event, options: Options) -> Found:
    """Every ticket sold: CONFIRMED claims and their ticket rows = inventory."""
    inventory = sum(inventory for _name, inventory, *_ in _tiers(event))
    sold = value(
        f"SELECT COALESCE(SUM(quantity - moved), 0) FROM {CLAIM} "  # noqa: S608
        "WHERE event_id = %s AND status = %s",
        [event.pk, ClaimStatus.CONFIRMED.value],
    )
    sold_rows = value(
        f"SELECT COUNT(*) FROM {TICKET} k JOIN {CLAIM} c ON c.id = k.claim_id "  # noqa: S608
        "WHERE c.event_id = %s AND c.status = %s",
        [event.pk, ClaimStatus.CONFIRMED.value],
    )
    summary = f"inventory {inventory}, sold by claims {sold}, sold ticket rows {sold_rows}"
    problems = [summary] if not int(inventory) == int(sold) == int(sold_rows) else []
    return Found(problems, summary, {"inventory": int(inventory), "sold": int(sold)})
