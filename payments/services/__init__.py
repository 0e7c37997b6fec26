"""Writes for payments: the only place that changes them.

- ``payment_initialize``: the outbox write, the gateway call outside any
  transaction, then PENDING (one live payment per claim); a merchant-side
  refusal keeps the payment waiting and the claim held.
- ``payment_webhook_receive``: signed, deduplicated, one short transaction
  (charges, refunds, disputes).
- ``payment_check_on_return``: the customer is back from checkout: verify now.
- ``payment_refund`` / ``payment_refund_auto``: money back through the
  gateway's Refund API; ``resale_refund_open``: a resold ticket's share
  (``resale_refund_retry``: staff ask again for one that failed).
- ``payments_reconcile`` / ``payment_reconcile``: finish what a crash or a
  lost webhook left behind, refunds included.
- ``paying_claims_expire``: expired claims with a payment in flight, released
  only once the gateway says the payment failed (or it outlived its bound).
- ``payment_verify_now`` / ``payment_fail_and_release`` / ``payment_mark_refunded``
  / ``payment_refund_by_staff`` / ``payment_keep_tickets``: staff actions.
"""

from payments.services.expiry import PayingExpiryReport, paying_claims_expire
from payments.services.incidents import gateway_incident_open
from payments.services.initialize import PaymentStart, payment_initialize, payment_open
from payments.services.reconcile import (
    payment_reconcile,
    payment_settle_before_expiry,
    payments_due,
    payments_reconcile,
)
from payments.services.refund_checks import (
    payment_refunds_sync,
    refund_reconcile,
    refunds_due,
    refunds_reconcile,
)
from payments.services.refunds import payment_refund, payment_refund_auto, refundable_amount
from payments.services.resale_refunds import resale_refund_open, resale_refund_retry
from payments.services.returns import payment_check_on_return
from payments.services.staff import (
    payment_fail_and_release,
    payment_keep_tickets,
    payment_mark_refunded,
    payment_refund_by_staff,
    payment_verify_now,
)
from payments.services.webhooks import WebhookOutcome, payment_webhook_receive

__all__ = [
    "PayingExpiryReport",
    "PaymentStart",
    "WebhookOutcome",
    "gateway_incident_open",
    "paying_claims_expire",
    "payment_check_on_return",
    "payment_fail_and_release",
    "payment_initialize",
    "payment_keep_tickets",
    "payment_mark_refunded",
    "payment_open",
    "payment_reconcile",
    "payment_refund",
    "payment_refund_auto",
    "payment_refund_by_staff",
    "payment_refunds_sync",
    "payment_settle_before_expiry",
    "payment_verify_now",
    "payment_webhook_receive",
    "payments_due",
    "payments_reconcile",
    "refund_reconcile",
    "refundable_amount",
    "refunds_due",
    "refunds_reconcile",
    "resale_refund_open",
    "resale_refund_retry",
]
