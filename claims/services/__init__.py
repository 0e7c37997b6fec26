"""Writes for claims: the only place that changes them.

A claim passes three doors, cheapest first: the admission check, the Redis
lock and counter (which turn most losers away without touching Postgres), and
the Postgres transaction that takes one ``Ticket`` row per ticket with
``FOR UPDATE SKIP LOCKED``. Only that last door is trusted (invariant 1): with
Redis flushed, stale or inflated, Postgres still hands out at most the rows
that exist, and the partial unique index allows one purchase per customer per
event (invariant 6).

A CONFIRMED claim has one issued ticket per seat (``issuing``), voided when
it leaves CONFIRMED (``claim_release``), checked in at the door (``checkin``),
returned for resale (``resale``, sold in ``resold``) or sent to another
person (``transfers``).
"""

from claims.services.account import (
    face_value,
    purchase_balance,
    purchase_post,
    ticket_may_move,
)
from claims.services.checkin import issued_ticket_check_in
from claims.services.claiming import claim_create
from claims.services.expiry import claims_expire
from claims.services.issuing import issued_tickets_issue, issued_tickets_void
from claims.services.outcome import claim_confirm, claim_reinstate
from claims.services.payments import (
    claim_dispute_clear,
    claim_dispute_flag,
    claim_extend,
    claim_lock,
    claim_payment_ended,
    claim_payment_started,
)
from claims.services.release import claim_release, tickets_returned_on_commit
from claims.services.resale import (
    holder_ticket,
    ticket_return,
    ticket_return_quote,
    ticket_return_withdraw,
)
from claims.services.returns_close import returns_close_due
from claims.services.transfers import (
    ticket_transfer_accept,
    ticket_transfer_cancel,
    ticket_transfer_create,
)

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
    "claims_expire",
    "face_value",
    "holder_ticket",
    "issued_ticket_check_in",
    "issued_tickets_issue",
    "issued_tickets_void",
    "purchase_balance",
    "purchase_post",
    "returns_close_due",
    "ticket_may_move",
    "ticket_return",
    "ticket_return_quote",
    "ticket_return_withdraw",
    "ticket_transfer_accept",
    "ticket_transfer_cancel",
    "ticket_transfer_create",
    "tickets_returned_on_commit",
]
