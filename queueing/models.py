import uuid

from django.db import models

from fairqueue.states import choices
from queueing.domain import (
    LIVE_STATUSES,
    WAITLIST_LIVE_STATUSES,
    EndReason,
    QueueStatus,
    WaitlistStatus,
)


class QueueEntry(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: queue_event_status and queue_one_live_entry both
    # lead with the event, and every index costs each join and admission.
    event = models.ForeignKey(
        "events.Event", on_delete=models.CASCADE, related_name="queue", db_index=False
    )
    customer = models.ForeignKey("core.Customer", on_delete=models.CASCADE, related_name="queue")
    status = models.CharField(
        max_length=16, choices=choices(QueueStatus), default=QueueStatus.WAITING
    )
    # The ordering score the entry was given: join time in microseconds, or its
    # rank in the shuffled pre-queue. Redis sorted sets are rebuilt from it.
    score = models.BigIntegerField()
    prequeue = models.BooleanField(default=False)
    joined_at = models.DateTimeField(auto_now_add=True)
    admitted_at = models.DateTimeField(null=True, blank=True)
    admission_expires_at = models.DateTimeField(null=True, blank=True)
    # When the customer asked for the one extension of their time to choose
    # (None: not yet; queueing.services.extension).
    extended_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # db_default: the join inserts its row in raw SQL.
    end_reason = models.CharField(
        max_length=32, choices=choices(EndReason), blank=True, default="", db_default=""
    )
    # Set on an admission made by a waiting-list offer: it is good for one
    # ticket of this tier only (its admission token says so, and the claim
    # checks it). None for an admission from the line.
    offer_tier = models.ForeignKey(
        "events.TicketTier",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        db_index=False,
    )

    class Meta:
        verbose_name_plural = "queue entries"
        constraints = [
            models.UniqueConstraint(
                fields=["event", "customer"],
                condition=models.Q(status__in=[s.value for s in LIVE_STATUSES]),
                name="queue_one_live_entry",
            )
        ]
        indexes = [models.Index(fields=["event", "status", "score"], name="queue_event_status")]

    def __str__(self) -> str:
        return f"{self.customer_id} @ {self.event_id} ({self.status})"


class AdmissionState(models.Model):
    """Per event, what admission keeps in Postgres besides the entries.

    ``served``: customers admitted so far, counted by the tick under the
    event's row lock; the Redis ``served`` counter is set from it.
    ``frontier``: the highest score admitted so far (None: nobody yet). The
    tick admits the lowest (score, customer) WAITING entries, so a page that
    knows its own score learns its admission from the public line state
    (``queueing.line_state``) when the frontier reaches it.

    The admission clock: windows run out only while the waiting room works.
    ``stopped_since`` is set when Redis was found unreachable (by a tick, or
    by a request that had to do without it), ``last_tick_at`` by every tick;
    the first tick that finds Redis again (or that comes after ticks stopped)
    gives every open window the time the clock stood still
    (``queueing.services.clock``)."""

    event = models.OneToOneField(
        "events.Event", primary_key=True, on_delete=models.CASCADE, related_name="+"
    )
    served = models.PositiveBigIntegerField(default=0)
    frontier = models.BigIntegerField(null=True, blank=True)
    last_tick_at = models.DateTimeField(null=True, blank=True)
    stopped_since = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"admission of {self.event_id}"


class WaitlistEntry(models.Model):
    """A customer's place on a sold-out event's waiting list: for one tier,
    or any (``tier`` None). When a ticket frees up, the first entry it fits is
    OFFERED: it is given an ADMITTED queue entry (``queue_entry``) for one
    ticket of ``offer_tier``, used with the claim like any admission
    (``queueing.services.waitlist``)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: waitlist_event_status and waitlist_one_live_entry lead with it.
    event = models.ForeignKey(
        "events.Event", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    customer = models.ForeignKey("core.Customer", on_delete=models.CASCADE, related_name="+")
    tier = models.ForeignKey(
        "events.TicketTier", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    status = models.CharField(
        max_length=16, choices=choices(WaitlistStatus), default=WaitlistStatus.WAITING
    )
    # The order: the join time in microseconds, or, for an entry made in the
    # first minute after the sell-out, its rank in the draw (1..N, ahead of
    # every later one; 0 until the draw).
    score = models.BigIntegerField()
    drawn = models.BooleanField(default=False)
    joined_at = models.DateTimeField(auto_now_add=True)
    offered_at = models.DateTimeField(null=True, blank=True)
    offer_tier = models.ForeignKey(
        "events.TicketTier", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    queue_entry = models.ForeignKey(
        QueueEntry, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    finished_at = models.DateTimeField(null=True, blank=True)
    # When the offer's email went out (null: not yet, or never offered).
    emailed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "waiting list entries"
        constraints = [
            models.UniqueConstraint(
                fields=["event", "customer"],
                condition=models.Q(status__in=[s.value for s in WAITLIST_LIVE_STATUSES]),
                name="waitlist_one_live_entry",
            )
        ]
        indexes = [
            models.Index(fields=["event", "status", "score"], name="waitlist_event_status"),
            # The email sweep's open offers not emailed.
            models.Index(
                fields=["offered_at"],
                condition=models.Q(status=WaitlistStatus.OFFERED.value, emailed_at__isnull=True),
                name="waitlist_offer_not_emailed",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.customer_id} on the waiting list of {self.event_id} ({self.status})"


class WaitlistState(models.Model):
    """Per event: when its waiting list opened (the sell-out), and when the
    entries of its first minute were drawn into a random order."""

    event = models.OneToOneField(
        "events.Event", primary_key=True, on_delete=models.CASCADE, related_name="+"
    )
    opened_at = models.DateTimeField()
    drawn_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"waiting list of {self.event_id}"
