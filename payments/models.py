"""Payments, their refunds, their append-only event log, the webhook inbox,
and the gateway incidents staff are alerted to.

A ``Payment`` is written in INITIALIZING before the gateway is called (the
outbox pattern): a crash at any point leaves a row that reconciliation can
finish. ``PaymentEvent`` is append-only (a database trigger refuses UPDATE
and DELETE). ``WebhookReceipt`` deduplicates gateway deliveries by a unique
constraint: a repeat is "already processed".
"""

import uuid

from django.db import models

from fairqueue.states import choices
from payments.domain import (
    LIVE_STATUSES,
    OPEN_REFUND_STATUSES,
    PAYMENT_STATUS_CHOICES,
    DisputeState,
    EventKind,
    PaymentStatus,
    RefundStatus,
)


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
    # Refunded so far (minor units of paid_currency), summed over processed refunds.
    refunded_amount = models.BigIntegerField(default=0)
    dispute = models.CharField(
        max_length=16,
        choices=choices(DisputeState),
        blank=True,
        default="",
        help_text="Set when the customer's bank disputes or reverses the charge (staff decide).",
    )
    disputed_at = models.DateTimeField(null=True, blank=True)
    # Initialize was refused for a merchant-side reason (our key, our account,
    # our request): the payment waits in INITIALIZING, its claim kept, until
    # the gateway accepts it; the claim gets the time back when it does.
    blocked_since = models.DateTimeField(null=True, blank=True)
    # The gateway kept it in a non-final status past PAYMENT_IN_PROGRESS_MAX_SECONDS
    # after the claim expired: the claim was released, staff alerted.
    overdue_at = models.DateTimeField(null=True, blank=True)
    verified_at = models.DateTimeField(
        null=True, blank=True, help_text="Last time the gateway was asked about it."
    )
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
            models.Index(
                fields=["disputed_at"],
                condition=~models.Q(dispute=""),
                name="payment_disputed",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.reference} ({self.status})"


class Refund(models.Model):
    """One request to give money of a payment back, through the gateway's
    Refund API (or seen in its webhooks when made in its dashboard). Written
    in REQUESTED before the gateway is called, like a payment."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    payment = models.ForeignKey(Payment, on_delete=models.PROTECT, related_name="refunds")
    amount = models.PositiveBigIntegerField(help_text="In minor units.")
    currency = models.CharField(max_length=3)
    # True: the gateway was asked for everything left (no amount sent).
    full = models.BooleanField(default=True)
    # A resold ticket's money going back to its first buyer: the purchase
    # keeps its other tickets and the payment stays CONFIRMED.
    for_resale = models.BooleanField(default=False)
    reason = models.CharField(max_length=300, blank=True, default="")
    requested_by = models.CharField(
        max_length=150, help_text="auto, staff:<user>, or gateway (made in its dashboard)"
    )
    status = models.CharField(
        max_length=16, choices=choices(RefundStatus), default=RefundStatus.REQUESTED
    )
    gateway_refund_id = models.CharField(max_length=64, blank=True, default="")
    gateway_status = models.CharField(max_length=32, blank=True, default="")
    failure_reason = models.CharField(max_length=300, blank=True, default="")
    # Reconciliation looks at open refunds whose next_check_at has passed (a
    # lease, as for payments).
    next_check_at = models.DateTimeField()
    checks = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    settled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # One refund of ours in flight per payment: each is asked for
            # against what the purchase's account allows once the last has
            # settled. A refund made in the gateway's dashboard is recorded
            # whenever it comes (``requested_by`` gateway).
            models.UniqueConstraint(
                fields=["payment"],
                condition=models.Q(status__in=[s.value for s in OPEN_REFUND_STATUSES])
                & ~models.Q(requested_by="gateway"),
                name="refund_one_open_per_payment",
            ),
            # A gateway refund is ours, or recorded as made outside, once.
            models.UniqueConstraint(
                fields=["gateway_refund_id"],
                condition=~models.Q(gateway_refund_id=""),
                name="refund_gateway_id_once",
            ),
            models.CheckConstraint(condition=models.Q(amount__gt=0), name="refund_amount"),
        ]
        indexes = [
            models.Index(
                fields=["next_check_at"],
                condition=models.Q(status__in=[s.value for s in OPEN_REFUND_STATUSES]),
                name="refund_open_by_next_check",
            ),
        ]

    def __str__(self) -> str:
        return f"refund {self.amount} {self.currency} of {self.payment_id} ({self.status})"


class GatewayIncident(models.Model):
    """The gateway refuses us for a reason on our side (a rotated or wrong
    key, a currency or channel not enabled, a request it finds invalid).
    One open row per operation, counting refusals until the operation next
    succeeds; staff see it in the admin, monitoring reads ``failures``."""

    operation = models.CharField(max_length=32, help_text="initialize, verify or refund")
    opened_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField()
    failures = models.PositiveIntegerField(default=1)
    last_http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_message = models.CharField(max_length=300, blank=True, default="")
    last_reference = models.CharField(max_length=64, blank=True, default="")
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-opened_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["operation"],
                condition=models.Q(resolved_at__isnull=True),
                name="gateway_incident_one_open",
            )
        ]

    def __str__(self) -> str:
        state = "resolved" if self.resolved_at else "open"
        return f"{self.operation} refused {self.failures}x ({state})"


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
    """One row per distinct gateway delivery (event type + key): the unique
    constraint makes a repeated delivery a no-op. The key of a
    ``charge.success`` is the reference (one confirmation per transaction,
    whatever the body); of a refund or dispute event, the refund or dispute
    and a digest of the body (each status change counts once)."""

    event_type = models.CharField(max_length=64)
    reference = models.CharField(max_length=64)
    key = models.CharField(max_length=200)
    payment = models.ForeignKey(
        Payment, null=True, blank=True, on_delete=models.PROTECT, related_name="webhooks"
    )
    gateway_transaction_id = models.CharField(max_length=64, blank=True, default="")
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["event_type", "key"], name="webhook_receipt_key_unique")
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.reference}"
