import uuid

from django.contrib.postgres.fields import ArrayField
from django.db import models

from claims.domain import (
    CLAIM_STATUS_CHOICES,
    HOLDING_STATUSES,
    ISSUED_TICKET_STATUS_CHOICES,
    ClaimStatus,
    IssuedTicketStatus,
    ReleaseReason,
)
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
    # On a reserved tier: the labels of the claim's seats (as many as
    # ``quantity``), kept after a release so a late payment re-instates the
    # same seats. Empty on general admission.
    seats = ArrayField(models.CharField(max_length=48), default=list, blank=True)
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


class IssuedTicket(models.Model):
    """A ticket issued to a buyer: one per seat of a CONFIRMED claim, with
    the unguessable code its QR holds and the door scans.

    Not ``inventory.Ticket``: that is the sellable unit (one row per ticket of
    a tier, taken by claims and reused after a release). An issued ticket
    belongs to one sale for good: when its claim leaves CONFIRMED (a refund,
    a staff release) it is VOID, and its code still answers "void" at the door.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    code = models.CharField(max_length=16, unique=True)
    claim = models.ForeignKey(Claim, on_delete=models.PROTECT, related_name="issued_tickets")
    event = models.ForeignKey(
        "events.Event", on_delete=models.PROTECT, related_name="issued_tickets"
    )
    tier = models.ForeignKey("events.TicketTier", on_delete=models.PROTECT, related_name="+")
    customer = models.ForeignKey(
        "core.Customer", on_delete=models.PROTECT, related_name="issued_tickets"
    )
    holder_email = models.EmailField()
    seat = models.PositiveSmallIntegerField(help_text="1..quantity within its claim.")
    # The seat's label on a reserved tier ("A-12"); empty on general admission.
    seat_label = models.CharField(max_length=48, blank=True, default="")
    status = models.CharField(
        max_length=8, choices=ISSUED_TICKET_STATUS_CHOICES, default=IssuedTicketStatus.VALID
    )
    issued_at = models.DateTimeField()
    checked_in_at = models.DateTimeField(null=True, blank=True)
    checked_in_by = models.CharField(max_length=150, blank=True, default="")
    voided_at = models.DateTimeField(null=True, blank=True)
    void_reason = models.CharField(max_length=32, blank=True, default="")
    # When the confirmation email carrying this ticket went out (null: not yet).
    emailed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["issued_at", "seat"]
        constraints = [
            # Issuing twice for one claim (a repeated confirmation) makes no
            # second set: the INSERT skips seats that are already issued.
            models.UniqueConstraint(
                fields=["claim", "seat"],
                condition=~models.Q(status=IssuedTicketStatus.VOID.value),
                name="issued_ticket_one_per_seat",
            ),
        ]
        indexes = [
            models.Index(fields=["customer", "issued_at"], name="issued_ticket_customer"),
            models.Index(
                fields=["issued_at"],
                condition=models.Q(emailed_at__isnull=True),
                name="issued_ticket_not_emailed",
            ),
        ]

    def __str__(self) -> str:
        return f"ticket {self.code} ({self.status})"
