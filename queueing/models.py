import uuid

from django.db import models

from fairqueue.states import choices
from queueing.domain import LIVE_STATUSES, QueueStatus


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
    finished_at = models.DateTimeField(null=True, blank=True)

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
