import uuid

from django.db import models

from claims.domain import CLAIM_STATUS_CHOICES, HOLDING_STATUSES, ClaimStatus, ReleaseReason
from fairqueue.states import choices


class Claim(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    event = models.ForeignKey("events.Event", on_delete=models.PROTECT, related_name="claims")
    tier = models.ForeignKey("events.TicketTier", on_delete=models.PROTECT, related_name="claims")
    customer = models.ForeignKey("core.Customer", on_delete=models.PROTECT, related_name="claims")
    queue_entry = models.ForeignKey(
        "queueing.QueueEntry", null=True, blank=True, on_delete=models.SET_NULL
    )
    quantity = models.PositiveSmallIntegerField()
    amount = models.PositiveBigIntegerField(help_text="Total in minor units.")
    currency = models.CharField(max_length=3)
    status = models.CharField(
        max_length=16, choices=CLAIM_STATUS_CHOICES, default=ClaimStatus.CLAIMED
    )
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)
    # A payment for this claim is in flight (INITIALIZING or PENDING): claim
    # expiry leaves it to the payments app, which asks the gateway first
    # (invariant 5). Set and cleared by payments through claims' services, in
    # the transaction that moves the payment.
    payment_in_flight = models.BooleanField(default=False)
    # The payment is disputed (a chargeback) or was reversed by the customer's
    # bank: staff decide whether the tickets stay valid (they do until then).
    disputed_at = models.DateTimeField(null=True, blank=True)
    release_reason = models.CharField(
        max_length=32, choices=choices(ReleaseReason), blank=True, default=""
    )

    class Meta:
        constraints = [
            # Invariant 6: one purchase per customer per event.
            models.UniqueConstraint(
                fields=["event", "customer"],
                condition=models.Q(status__in=[s.value for s in HOLDING_STATUSES]),
                name="claim_one_purchase_per_event",
            ),
            models.CheckConstraint(condition=models.Q(quantity__gte=1), name="claim_quantity"),
        ]
        indexes = [
            models.Index(
                fields=["expires_at"],
                condition=models.Q(status=ClaimStatus.CLAIMED.value),
                name="claim_open_by_expiry",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.quantity} x {self.tier_id} for {self.customer_id} ({self.status})"
