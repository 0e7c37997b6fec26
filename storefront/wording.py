"""Plain words for every status a customer can see. The raw statuses stay in
the API (programs switch on them); pages, emails and the ``*_text`` fields of
the customer's own state say these instead."""

from __future__ import annotations

from typing import Any

PAYMENT_TEXT = {
    "INITIALIZING": "Starting your payment",
    "PENDING": "Waiting for your payment",
    "CONFIRMED": "Paid",
    "FAILED": "Not paid: you were not charged",
    "REFUND_REQUIRED": "Paid, but this payment could not be kept: a refund is on its way",
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
    "refunded": "Your purchase was cancelled",
}

TICKET_TEXT = {
    "VALID": "Valid",
    "USED": "Used at the door",
    "VOID": "Cancelled",
}


def words(table: dict[str, str], status: str | None) -> str:
    """The plain words for ``status``; an unknown one (a status added later)
    reads as a neutral sentence, never as the raw word."""
    if not status:
        return ""
    return table.get(status, "Being processed")


# A success of another amount or currency than asked (invariant 7): the
# tickets were never at stake, the money goes back in full.
WRONG_AMOUNT_TEXT = (
    "The amount paid did not match the price, so it cannot pay for the tickets:"
    " it is being refunded in full"
)


def payment_words(payment: Any) -> str:
    """The plain words for one payment: its status's, except for money of
    the wrong amount or currency on its way back."""
    if payment.status == "REFUND_REQUIRED" and payment.paid_amount is not None:
        paid_currency = (payment.paid_currency or "").upper()
        if payment.paid_amount != payment.amount or paid_currency != payment.currency.upper():
            return WRONG_AMOUNT_TEXT
    return words(PAYMENT_TEXT, payment.status)
