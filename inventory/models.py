from django.db import models


class Ticket(models.Model):
    """One row per sellable ticket of a tier (invariant 1).

    A claim takes its tickets by setting ``claim`` on free rows selected with
    ``FOR UPDATE SKIP LOCKED``: Postgres itself refuses to hand out more
    tickets than exist, and concurrent claims lock different rows instead of
    queueing on one counter row.

    ``reservation_id`` names the Redis reservation (``inventory.store``) that
    fronted the last claim to take the row. Reconciliation uses it to tell a
    reservation whose claim committed (its process died before finishing it
    in Redis) from one still in flight. A released row keeps it: that
    reservation did commit.
    """

    tier = models.ForeignKey("events.TicketTier", on_delete=models.CASCADE, related_name="tickets")
    claim = models.ForeignKey(
        "claims.Claim", null=True, blank=True, on_delete=models.PROTECT, related_name="tickets"
    )
    reservation_id = models.CharField(max_length=32, blank=True, default="")
    # A ticket returned for resale: the CONFIRMED claim whose holder still
    # owns it until a buyer has paid. The row is free (``claim`` null) or
    # held by the buyer's claim in flight; every free count sells it like
    # any free ticket. Cleared when the resale is paid or withdrawn.
    resale_from = models.ForeignKey(
        "claims.Claim", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # A seat of a reserved tier (all null/false on a general admission tier).
    # ``blocked`` seats (house seats, broken seats) are never free: the guard
    # and every free count leave them out.
    section = models.CharField(max_length=32, null=True, blank=True)
    row = models.CharField(max_length=16, null=True, blank=True)
    number = models.PositiveIntegerField(null=True, blank=True)
    label = models.CharField(max_length=48, null=True, blank=True)
    x = models.FloatField(null=True, blank=True)
    y = models.FloatField(null=True, blank=True)
    accessible = models.BooleanField(default=False)
    restricted_view = models.BooleanField(default=False)
    blocked = models.BooleanField(default=False)

    class Meta:
        # The table this model had when it lived in the events app.
        db_table = "events_ticket"
        indexes = [
            models.Index(
                fields=["tier"], condition=models.Q(claim__isnull=True), name="ticket_free_by_tier"
            ),
            models.Index(
                fields=["resale_from"],
                condition=models.Q(resale_from__isnull=False),
                name="ticket_on_resale",
            ),
            models.Index(
                fields=["reservation_id"],
                condition=~models.Q(reservation_id=""),
                name="ticket_reservation",
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["tier", "label"],
                condition=models.Q(label__isnull=False),
                name="ticket_seat_label_unique",
            ),
        ]

    def __str__(self) -> str:
        if self.label:
            return f"seat {self.label} of {self.tier_id}"
        return f"ticket {self.pk} of {self.tier_id}"
