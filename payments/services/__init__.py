"""Writes for payments: the only place that changes them.

- ``payment_initialize``: the outbox write, the gateway call outside any
  transaction, then PENDING (one live payment per claim).
- ``payment_webhook_receive``: signed, deduplicated, one short transaction.
- ``payments_reconcile`` / ``payment_reconcile``: finish what a crash or a
  lost webhook left behind.
- ``paying_claims_expire``: expired claims with a payment in flight, released
  only once the gateway says the payment failed.
- ``payment_verify_now`` / ``payment_fail_and_release`` / ``payment_mark_refunded``:
  staff actions.
"""

from payments.services.expiry import PayingExpiryReport, paying_claims_expire
from payments.services.initialize import PaymentStart, payment_initialize, payment_open
from payments.services.reconcile import (
    payment_reconcile,
    payment_settle_before_expiry,
    payments_due,
    payments_reconcile,
)
from payments.services.staff import (
    payment_fail_and_release,
    payment_mark_refunded,
    payment_verify_now,
)
from payments.services.webhooks import WebhookOutcome, payment_webhook_receive

__all__ = [
    "PayingExpiryReport",
    "PaymentStart",
    "WebhookOutcome",
    "paying_claims_expire",
    "payment_fail_and_release",
    "payment_initialize",
    "payment_mark_refunded",
    "payment_open",
    "payment_reconcile",
    "payment_settle_before_expiry",
    "payment_verify_now",
    "payment_webhook_receive",
    "payments_due",
    "payments_reconcile",
]
