"""What the payments app does on news (its own and the apps' below it)."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.dispatch import receiver

from claims.signals import ticket_resold
from fairqueue.news import enqueue
from payments.signals import refund_required, refunds_to_look_up
from payments.tasks import payment_refund_auto, payment_refunds_sync, resale_refund_open


@receiver(refund_required, dispatch_uid="payments.auto_refund")
def auto_refund_enqueue(sender: Any, payment_id: uuid.UUID, **kwargs: Any) -> None:
    """With PAYSTACK_AUTO_REFUND the refund starts at once; reconciliation
    starts any that was not enqueued within one interval."""
    if settings.PAYSTACK_AUTO_REFUND:
        enqueue(payment_refund_auto, str(payment_id))


@receiver(ticket_resold, dispatch_uid="payments.resale_refund")
def resale_refund_enqueue(sender: Any, return_id: uuid.UUID, **kwargs: Any) -> None:
    """A returned ticket was paid for by someone else: its first buyer's
    refund starts (refund reconciliation opens any not enqueued)."""
    enqueue(resale_refund_open, str(return_id))


@receiver(refunds_to_look_up, dispatch_uid="payments.refunds_sync")
def refunds_sync_enqueue(sender: Any, payment_id: uuid.UUID, **kwargs: Any) -> None:
    """A refund event named no refund we know: the gateway's list decides
    which is ours (our open refunds are also due for their own look-up)."""
    enqueue(payment_refunds_sync, str(payment_id))
