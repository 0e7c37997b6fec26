"""Plain words for every status a customer can see. The raw statuses stay in
the API (programs switch on them); pages, emails and the ``*_text`` fields of
the customer's own state say these instead."""

from __future__ import annotations

PAYMENT_TEXT = {
    "INITIALIZING": "Starting your payment",
    "PENDING": "Waiting for your payment",
    "CONFIRMED": "Paid",
    "FAILED": "Not paid: you were not charged",
    "REFUND_REQUIRED": "Paid, but the tickets were gone: a refund is on its way",
    "REFUND_PENDING": "Refund on its way",
    "REFUNDED": "Refunded",
    "REFUND_FAILED": "Refund delayed: our staff are on it",
}

CLAIM_TEXT = {
    "CLAIMED": "Held for you: pay to confirm",
    "CONFIRMED": "Paid and confirmed",
    "RELEASED": "Released: the tickets went back on sale",
}

RELEASE_TEXT = {
    "customer": "You released these tickets",
    "expired": "Your hold ran out before payment",
    "payment_failed": "The payment did not go through",
    "staff": "Cancelled by our staff",
    "refunded": "Refunded",
}

# By the status a holder reads (``claims.domain.ticket_public_status``).
TICKET_TEXT = {
    "valid": "Valid",
    "on_resale": "On resale: still yours until someone buys it",
    "used": "Used at the door",
    "resold": "Resold: someone else bought it",
    "transferred": "Sent to someone else",
    "void": "Cancelled",
}


def words(table: dict[str, str], status: str | None) -> str:
    """The plain words for ``status``; an unknown one (a status added later)
    reads as a neutral sentence, never as the raw word."""
    if not status:
        return ""
    return table.get(status, "Being processed")
