"""Writes for claims: the only place that changes them.

A claim passes three doors, cheapest first: the admission check, the Redis
lock and counter (which turn most losers away without touching Postgres), and
the Postgres transaction that takes one ``Ticket`` row per ticket with
``FOR UPDATE SKIP LOCKED``. Only that last door is trusted (invariant 1): with
Redis flushed, stale or inflated, Postgres still hands out at most the rows
that exist, and the partial unique index allows one purchase per customer per
event (invariant 6).
"""

from claims.services.claiming import claim_create
from claims.services.expiry import claims_expire
from claims.services.outcome import claim_confirm, claim_reinstate
from claims.services.payments import (
    claim_dispute_clear,
    claim_dispute_flag,
    claim_extend,
    claim_lock,
    claim_payment_ended,
    claim_payment_started,
)
from claims.services.release import claim_release, claim_release_paid, tickets_returned_on_commit

__all__ = [
    "claim_confirm",
    "claim_create",
    "claim_dispute_clear",
    "claim_dispute_flag",
    "claim_extend",
    "claim_lock",
    "claim_payment_ended",
    "claim_payment_started",
    "claim_reinstate",
    "claim_release",
    "claim_release_paid",
    "claims_expire",
    "tickets_returned_on_commit",
]
