"""One account per purchase: an append-only list of entries (a database
trigger refuses UPDATE and DELETE, as for the payment log). The rules that
read it are in ``ledger.domain``."""

from django.db import models

from fairqueue.states import choices
from ledger.domain import Bucket, EntryKind


class AccountEntry(models.Model):
    # The purchase (a claim). Written under its row lock, so the entries of
    # one purchase never interleave with a decision read from them.
    claim = models.ForeignKey("claims.Claim", on_delete=models.PROTECT, related_name="account")
    kind = models.CharField(max_length=24, choices=choices(EntryKind))
    amount = models.BigIntegerField(default=0, help_text="Minor units moved.")
    currency = models.CharField(max_length=3)
    debit = models.CharField(max_length=12, blank=True, default="", choices=choices(Bucket))
    credit = models.CharField(max_length=12, blank=True, default="", choices=choices(Bucket))
    tickets = models.SmallIntegerField(default=0, help_text="Tickets held more (or fewer).")
    # The payment the money went through, and the refund an entry is about.
    payment_id = models.UUIDField(null=True, blank=True)
    refund_id = models.UUIDField(null=True, blank=True)
    gateway_refund_id = models.CharField(max_length=64, blank=True, default="")
    # What else it is about: a return, a transfer, a dispute (its id).
    ref = models.CharField(max_length=64, blank=True, default="")
    actor = models.CharField(max_length=150)
    note = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["claim", "id"]
        indexes = [models.Index(fields=["claim", "id"], name="account_entry_claim")]
        constraints = [
            models.CheckConstraint(condition=models.Q(amount__gte=0), name="account_amount"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount} {self.currency} ({self.debit}->{self.credit})"
