import uuid

from django.contrib.postgres.fields import ArrayField
from django.db import models

from claims.domain import (
    CLAIM_STATUS_CHOICES,
    HOLDING_STATUSES,
    ISSUED_TICKET_STATUS_CHOICES,
    ClaimSource,
    ClaimStatus,
    IssuedTicketStatus,
    ReleaseReason,
    ReturnStatus,
    TransferStatus,
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
    # ``transfer``: made for the recipient of a ticket sent by its holder
    # (quantity 1, nothing paid, no payment).
    source = models.CharField(
        max_length=8, choices=choices(ClaimSource), default=ClaimSource.SALE.value
    )
    # Tickets of this purchase that left it for good (resold, transferred):
    # it holds ``quantity - moved`` ticket rows, its returns on resale included.
    moved = models.PositiveSmallIntegerField(default=0)

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
        max_length=16, choices=ISSUED_TICKET_STATUS_CHOICES, default=IssuedTicketStatus.VALID
    )
    # The ticket this one replaced (resold or transferred to its holder), and
    # how many transfers lie behind it (the organizer's limit counts them).
    replaces = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    transfers = models.PositiveSmallIntegerField(default=0)
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


class TicketReturn(models.Model):
    """A ticket its holder gave back for resale at face value. The ticket
    stays theirs (``ON_RESALE``) until a buyer has paid for its ticket row
    (``ticket_row``); then it is RESOLD: the old code void, the buyer's new
    ticket issued for the same seat, and the holder refunded face value minus
    ``fee`` (``refund_id``: the payments app's refund, opened after commit)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    ticket = models.ForeignKey(IssuedTicket, on_delete=models.PROTECT, related_name="returns")
    claim = models.ForeignKey(Claim, on_delete=models.PROTECT, related_name="returns")
    event = models.ForeignKey("events.Event", on_delete=models.PROTECT, related_name="+")
    ticket_row = models.ForeignKey("inventory.Ticket", on_delete=models.PROTECT, related_name="+")
    status = models.CharField(
        max_length=16, choices=choices(ReturnStatus), default=ReturnStatus.ON_RESALE.value
    )
    fee = models.PositiveBigIntegerField(default=0)
    refund_amount = models.PositiveBigIntegerField(help_text="Minor units, face value minus fee.")
    currency = models.CharField(max_length=3)
    resale_claim = models.ForeignKey(
        Claim, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    new_ticket = models.ForeignKey(
        IssuedTicket, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # The refund the payments app opened for it (a payments.Refund id).
    refund_id = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    resold_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # WITHDRAWN by the system: ``returns_closed`` (empty: by its holder).
    end_reason = models.CharField(max_length=32, blank=True, default="")
    # When the holder's email about its end (resold, or back at the close of
    # returns) went out (null: not yet, or none due).
    emailed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["ticket"],
                condition=models.Q(status=ReturnStatus.ON_RESALE.value),
                name="ticket_return_one_open",
            ),
        ]
        indexes = [
            models.Index(
                fields=["resold_at"],
                condition=models.Q(status=ReturnStatus.RESOLD.value, refund_id__isnull=True),
                name="ticket_return_refund_due",
            ),
        ]

    def __str__(self) -> str:
        return f"return of {self.ticket_id} ({self.status})"


class TicketTransfer(models.Model):
    """A ticket sent by its holder to another person, by email. Accepted by
    the recipient signed in with that address: the old code voids and a new
    ticket (same seat) is issued to them. No money changes hands."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    ticket = models.ForeignKey(IssuedTicket, on_delete=models.PROTECT, related_name="transfers_out")
    event = models.ForeignKey("events.Event", on_delete=models.PROTECT, related_name="+")
    sender = models.ForeignKey("core.Customer", on_delete=models.PROTECT, related_name="+")
    to_email = models.EmailField()
    # The address in its canonical form (customers.emails): the recipient
    # signed in with any spelling of that mailbox finds it.
    to_canonical = models.CharField(max_length=254, db_index=True)
    status = models.CharField(
        max_length=16, choices=choices(TransferStatus), default=TransferStatus.PENDING.value
    )
    new_ticket = models.ForeignKey(
        IssuedTicket, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # When the recipient's email went out (null: not yet).
    emailed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["ticket"],
                condition=models.Q(status=TransferStatus.PENDING.value),
                name="ticket_transfer_one_pending",
            ),
        ]

    def __str__(self) -> str:
        return f"transfer of {self.ticket_id} to {self.to_email} ({self.status})"


class TicketEvent(models.Model):
    """Append-only log of every step of an issued ticket (returned, withdrawn,
    resold, refunded, sent, accepted, voided): a database trigger refuses
    UPDATE and DELETE, as for the payment log."""

    ticket = models.ForeignKey(IssuedTicket, on_delete=models.PROTECT, related_name="events")
    kind = models.CharField(max_length=32)
    actor = models.CharField(max_length=150)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["ticket", "created_at"], name="ticketevent_ticket")]

    def __str__(self) -> str:
        return f"{self.kind} {self.ticket_id}"
