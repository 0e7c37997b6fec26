import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator
from django.db import models

from events.domain import (
    CHOOSE_SECONDS_DEFAULT,
    EVENT_STATUS_CHOICES,
    MAX_TIER_INVENTORY,
    EventStatus,
)


class Organizer(models.Model):
    """A company selling tickets; its members are Django users who use the admin."""

    name = models.CharField(max_length=200, unique=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="organizers")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Event(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organizer = models.ForeignKey(Organizer, on_delete=models.PROTECT, related_name="events")
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=220, unique=True)
    description = models.TextField(blank=True)
    venue = models.CharField(max_length=200, blank=True)
    starts_at = models.DateTimeField(null=True, blank=True)
    currency = models.CharField(max_length=3, default="NGN")
    sale_start = models.DateTimeField()
    sale_end = models.DateTimeField()
    prequeue_opens_at = models.DateTimeField(null=True, blank=True)
    max_tickets_per_customer = models.PositiveSmallIntegerField(default=1)
    admission_batch_size = models.PositiveIntegerField(default=500)
    # The time to choose: an admission that has not become a claim by then
    # lapses and its slot goes to the next in line (one extension on request).
    admission_window_seconds = models.PositiveIntegerField(
        "time to choose (seconds)",
        default=CHOOSE_SECONDS_DEFAULT,
        help_text="How long an admitted customer has to choose tickets; the page warns 30 "
        "seconds before the end and offers one extension of the same length. Paying has its "
        "own time once the tickets are held.",
    )
    max_active_admitted = models.PositiveIntegerField(default=5000)
    admit_ahead = models.BooleanField(
        "admit ahead of no-shows",
        default=False,
        help_text="Near the end of the sale, admit a few more customers than tickets are free: "
        "the measured share of admissions that lapse, at most 5 % of the free tickets. "
        "Nobody is ever sold a ticket that is not there: who finds nothing left is told at "
        "once and goes first on the waiting list.",
    )
    status = models.CharField(
        max_length=16, choices=EVENT_STATUS_CHOICES, default=EventStatus.DRAFT, db_index=True
    )
    # Set when the pre-queue has been shuffled into its final order (once).
    prequeue_shuffled_at = models.DateTimeField(null=True, blank=True)
    # Returns and transfers (docs/RESALE.md). Returns are open until
    # ``returns_until`` (none: closed); a resold ticket's holder gets its face
    # value back minus ``return_fee`` (minor units per ticket, kept by the
    # organizer). Transfers: off, or on with at most ``transfer_limit``
    # transfers per ticket (none: no limit).
    returns_until = models.DateTimeField(
        null=True, blank=True, help_text="Buyers may return tickets for resale until then."
    )
    return_fee = models.PositiveBigIntegerField(
        default=0, help_text="Kept per resold ticket, in minor units; shown before a return."
    )
    transfers_allowed = models.BooleanField(
        default=False, help_text="Holders may send a ticket to another person by email."
    )
    transfer_limit = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="At most this many transfers per ticket (empty: any)."
    )
    holder_shown = models.BooleanField(
        default=True, help_text="The holder's name is printed on the ticket and shown at the door."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["sale_start", "name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(sale_end__gt=models.F("sale_start")), name="event_sale_window"
            ),
            models.CheckConstraint(
                condition=models.Q(max_tickets_per_customer__gte=1), name="event_max_per_customer"
            ),
            models.CheckConstraint(
                condition=models.Q(admission_batch_size__gte=1), name="event_batch_size"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class TierKind(models.TextChoices):
    """General admission sells N interchangeable tickets; a reserved tier's
    tickets are seats with a label (``inventory.models.Ticket``)."""

    GENERAL = "general", "General admission"
    RESERVED = "reserved", "Reserved seating"


class TicketTier(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="tiers")
    name = models.CharField(max_length=100)
    price = models.PositiveBigIntegerField(help_text="In minor units (kobo for NGN).")
    inventory = models.PositiveIntegerField(validators=[MaxValueValidator(MAX_TIER_INVENTORY)])
    sort_order = models.PositiveSmallIntegerField(default=0)
    kind = models.CharField(max_length=16, choices=TierKind.choices, default=TierKind.GENERAL)

    class Meta:
        ordering = ["sort_order", "price"]
        constraints = [
            models.UniqueConstraint(fields=["event", "name"], name="tier_name_unique"),
            models.CheckConstraint(condition=models.Q(price__gt=0), name="tier_price_positive"),
            models.CheckConstraint(
                condition=models.Q(inventory__gt=0), name="tier_inventory_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event.name} / {self.name}"
