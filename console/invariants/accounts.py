"""Every purchase's account, from Postgres (invariant 7): it balances against
the payments, refunds and tickets it speaks of, no bucket is overdrawn (no
money given back twice), every ticket it holds is backed by its money, every
gateway refund is recorded once, and a transfer's two sides agree."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from claims.domain import ClaimStatus, IssuedTicketStatus, TransferStatus
from claims.models import Claim, IssuedTicket, TicketTransfer
from console.invariants.base import Found, Options, Scope, check, plural, rows, value
from events.models import Event
from ledger.domain import Bucket, EntryKind
from ledger.models import AccountEntry
from payments.domain import MONEY_TAKEN_STATUSES, OPEN_REFUND_STATUSES, PaymentStatus
from payments.models import Payment, Refund

ENTRY = AccountEntry._meta.db_table
CLAIM = Claim._meta.db_table
PAYMENT = Payment._meta.db_table
REFUND = Refund._meta.db_table
ISSUED = IssuedTicket._meta.db_table
TRANSFER = TicketTransfer._meta.db_table
TAKEN = [s.value for s in (*MONEY_TAKEN_STATUSES, PaymentStatus.REFUNDED)]
OPEN = [s.value for s in OPEN_REFUND_STATUSES]
LIVE_TICKETS = [s.value for s in IssuedTicketStatus if s != IssuedTicketStatus.VOID]
BUCKETS = [b.value for b in Bucket]

_BUCKET_SUMS = ", ".join(
    f"COALESCE(SUM(CASE WHEN a.credit = '{b}' THEN a.amount END), 0) "
    f"- COALESCE(SUM(CASE WHEN a.debit = '{b}' THEN a.amount END), 0)"
    for b in BUCKETS
)
_ACCOUNTS_SQL = (
    f"SELECT a.claim_id, c.status, c.amount / GREATEST(c.quantity, 1), "  # noqa: S608
    f"COALESCE(SUM(CASE WHEN a.kind = '{EntryKind.CHARGE.value}' THEN a.amount END), 0), "
    f"SUM(a.tickets), BOOL_OR(a.kind = '{EntryKind.DISPUTE_LOST.value}'), {_BUCKET_SUMS} "
    f"FROM {ENTRY} a JOIN {CLAIM} c ON c.id = a.claim_id WHERE c.event_id = %s "
    "GROUP BY a.claim_id, c.status, c.amount, c.quantity"
)


def _per_claim(sql: str, params: list[Any]) -> dict[Any, int]:
    return {claim_id: int(n or 0) for claim_id, n in rows(sql, params)}


@check(invariant=7)
def purchase_accounts_balance(event: Event, options: Options) -> Found:
    """Each purchase's account: what it says was taken, refunded and is in
    flight is what its payments and refunds say; no bucket is below zero;
    the tickets it holds are its live tickets, each backed by its face value
    (unless the bank took the money back); and a payment that took money
    has its charge in the account."""
    accounts = {row[0]: row for row in rows(_ACCOUNTS_SQL, [event.pk])}
    of_event = f"FROM {PAYMENT} p JOIN {CLAIM} c ON c.id = p.claim_id WHERE c.event_id = %s"
    taken = _per_claim(
        f"SELECT p.claim_id, SUM(COALESCE(p.paid_amount, p.amount)) {of_event} "
        "AND p.status = ANY(%s) GROUP BY p.claim_id",
        [event.pk, TAKEN],
    )
    refunded = _per_claim(
        f"SELECT p.claim_id, SUM(p.refunded_amount) {of_event} GROUP BY p.claim_id",
        [event.pk],
    )
    in_flight = _per_claim(
        f"SELECT p.claim_id, SUM(r.amount) FROM {REFUND} r JOIN {PAYMENT} p ON p.id = r.payment_id "  # noqa: S608
        f"JOIN {CLAIM} c ON c.id = p.claim_id WHERE c.event_id = %s AND r.status = ANY(%s) "
        "GROUP BY p.claim_id",
        [event.pk, OPEN],
    )
    live = _per_claim(
        f"SELECT claim_id, COUNT(*) FROM {ISSUED} WHERE event_id = %s "  # noqa: S608
        "AND status = ANY(%s) GROUP BY claim_id",
        [event.pk, LIVE_TICKETS],
    )
    found: dict[str, int] = defaultdict(int)
    if unaccounted := len(set(taken) - set(accounts)):
        found["with money taken and no account"] += unaccounted
    for claim_id, (_, status, face, charged, held_tickets, lost, *buckets) in accounts.items():
        bucket = dict(zip(BUCKETS, (int(b) for b in buckets), strict=True))
        if bucket[Bucket.HELD] < 0:
            found["that gave back more than it held"] += 1
        if any(amount < 0 for name, amount in bucket.items() if name != Bucket.HELD):
            found["with a bucket below zero"] += 1
        if charged != taken.get(claim_id, 0):
            found["whose charges are not what its payments took"] += 1
        if bucket[Bucket.REFUNDED] != refunded.get(claim_id, 0):
            found["whose refunds are not what its payments were refunded"] += 1
        if bucket[Bucket.IN_FLIGHT] != in_flight.get(claim_id, 0):
            found["whose money in flight is not its open refunds"] += 1
        holds = live.get(claim_id, 0) if status == ClaimStatus.CONFIRMED else 0
        if int(held_tickets or 0) != holds:
            found["whose tickets are not its live tickets"] += 1
        elif status == ClaimStatus.CONFIRMED and not lost and bucket[Bucket.HELD] < face * holds:
            found["holding a ticket its money no longer backs"] += 1
    problems = [f"{plural(n, 'purchase')} {what}" for what, n in sorted(found.items())]
    return Found(problems, f"{plural(len(accounts), 'purchase account')} balance")


@check(invariant=7, scope=Scope.DATABASE)
def gateway_refunds_once(options: Options) -> Found:
    """Each of the gateway's refunds is one refund here: ours, or recorded
    as made outside, never both and never twice."""
    twice = value(
        f"SELECT COUNT(*) FROM (SELECT gateway_refund_id FROM {REFUND} "  # noqa: S608
        "WHERE gateway_refund_id <> '' GROUP BY 1 HAVING COUNT(*) > 1) x",
        [],
    )
    problems = [f"{plural(twice, 'gateway refund')} recorded twice"] if twice else []
    return Found(problems, "every gateway refund recorded once")


@check(invariant=8)
def transfers_agree(event: Event, options: Options) -> Found:
    """An accepted transfer's two sides agree: the sender's purchase wrote it
    as sent (one ticket fewer), the recipient's as received (one more), the
    old ticket is void and the new one replaced it."""
    accepted = TransferStatus.ACCEPTED.value
    unmatched = value(
        f"SELECT COUNT(*) FROM {TRANSFER} t "  # noqa: S608
        f"JOIN {ISSUED} o ON o.id = t.ticket_id LEFT JOIN {ISSUED} n ON n.id = t.new_ticket_id "
        "WHERE t.event_id = %s AND t.status = %s AND ("
        f"(SELECT COUNT(*) FROM {ENTRY} a WHERE a.claim_id = o.claim_id "
        "AND a.kind = %s AND a.ref = t.id::text) <> 1 "
        f"OR (SELECT COUNT(*) FROM {ENTRY} a WHERE a.claim_id = n.claim_id "
        "AND a.kind = %s AND a.ref = t.id::text) <> 1 "
        "OR o.status <> %s OR n.replaces_id IS DISTINCT FROM o.id)",
        [
            event.pk,
            accepted,
            EntryKind.TICKET_SENT.value,
            EntryKind.TICKET_RECEIVED.value,
            IssuedTicketStatus.VOID.value,
        ],
    )
    done = value(
        f"SELECT COUNT(*) FROM {TRANSFER} WHERE event_id = %s AND status = %s",  # noqa: S608
        [event.pk, accepted],
    )
    problems = (
        [f"{plural(unmatched, 'accepted transfer')} whose sides disagree"] if unmatched else []
    )
    return Found(problems, f"{plural(done, 'accepted transfer')}, both sides agree")
