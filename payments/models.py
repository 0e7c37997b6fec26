"""Payments, their append-only event log, and the webhook inbox.

A ``Payment`` is written in INITIALIZING before the gateway is called (the
outbox pattern): a crash at any point leaves a row that reconciliation can
finish. ``PaymentEvent`` is append-only (a database trigger refuses UPDATE
and DELETE). ``WebhookReceipt`` deduplicates gateway deliveries by a unique
constraint: a repeat is "already processed".
"""

import uuid

from django.db import models

from fairqueue.states import choices
from payments.domain import LIVE_STATUSES, PAYMENT_STATUS_CHOICES, EventKind, PaymentStatus


class Payment(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    claim = models.ForeignKey("claims.Claim", on_delete=models.PROTECT, related_name="payments")
    customer = models.ForeignKey("core.Customer", on_delete=models.PROTECT, related_name="payments")
    reference = models.CharField(max_length=64, unique=True)
    email = models.EmailField()
    amount = models.PositiveBigIntegerField(help_text="In minor units (kobo for NGN).")
    currency = models.CharField(max_length=3)
    status = models.CharField(
        max_length=16, choices=PAYMENT_STATUS_CHOICES, default=PaymentStatus.INITIALIZING
    )
    authorization_url = models.URLField(max_length=500, blank=True, default="")
    access_code = models.CharField(max_length=100, blank=True, default="")
    gateway_transaction_id = models.CharField(max_length=64, blank=True, default="")
    gateway_status = models.CharField(
        max_length=32, blank=True, default="", help_text="Last status the gateway reported."
    )
    # What the gateway says was paid, when it reported a success.
    paid_amount = models.BigIntegerField(null=True, blank=True)
    paid_currency = models.CharField(max_length=3, blank=True, default="")
    flag_reason = models.CharField(
        max_length=300,
        blank=True,
        default="",
        help_text="Set when the gateway's answer does not match the payment (staff look).",
    )
    failure_reason = models.CharField(max_length=300, blank=True, default="")
    # Reconciliation looks at live payments whose next_check_at has passed; a
    # worker that takes a row pushes it forward first (a lease), so several
    # workers never work on the same payment at once.
    next_check_at = models.DateTimeField()
    checks = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # One live payment per claim: concurrent initialize calls make one row.
            models.UniqueConstraint(
                fields=["claim"],
                condition=models.Q(status__in=[s.value for s in LIVE_STATUSES]),
                name="payment_one_live_per_claim",
            ),
            # Backstop against paying one claim twice.
            models.UniqueConstraint(
                fields=["claim"],
                condition=models.Q(status=PaymentStatus.CONFIRMED.value),
                name="payment_one_confirmed_per_claim",
            ),
            models.CheckConstraint(condition=models.Q(amount__gt=0), name="payment_amount"),
        ]
        indexes = [
            models.Index(
                fields=["next_check_at"],
                condition=models.Q(status__in=[s.value for s in LIVE_STATUSES]),
                name="payment_live_by_next_check",
            ),
            models.Index(fields=["status", "created_at"], name="payment_status_created"),
        ]

    def __str__(self) -> str:
        return f"{self.reference} ({self.status})"


class PaymentEvent(models.Model):
    """Append-only log of every money movement around a payment (invariant 7)."""

    payment = models.ForeignKey(Payment, on_delete=models.PROTECT, related_name="events")
    kind = models.CharField(max_length=32, choices=choices(EventKind))
    from_status = models.CharField(max_length=16, blank=True, default="")
    to_status = models.CharField(max_length=16, blank=True, default="")
    actor = models.CharField(max_length=150, help_text="customer, gateway, reconcile, staff:<user>")
    data = models.JSONField(default=dict, blank=True)
    raw_body = models.TextField(
        blank=True, default="", help_text="Webhook body exactly as received."
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["payment", "created_at"], name="paymentevent_payment")]

    def __str__(self) -> str:
        return f"{self.kind} {self.from_status}->{self.to_status}".strip()


class WebhookReceipt(models.Model):
    """One row per distinct gateway delivery (event type + reference): the
    unique constraint makes a repeated delivery a no-op."""

    event_type = models.CharField(max_length=64)
    reference = models.CharField(max_length=64)
    payment = models.ForeignKey(
        Payment, null=True, blank=True, on_delete=models.PROTECT, related_name="webhooks"
    )
    gateway_transaction_id = models.CharField(max_length=64, blank=True, default="")
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["event_type", "reference"], name="webhook_receipt_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.reference}"
