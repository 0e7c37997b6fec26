"""What the storefront does on news from the apps below it."""

from __future__ import annotations

import uuid
from typing import Any

from django.dispatch import receiver

from claims.signals import claim_cancelled, claim_confirmed
from fairqueue.news import enqueue
from storefront.tasks import cancellation_email_send, confirmation_email_send


@receiver(claim_confirmed, dispatch_uid="storefront.confirmation_email")
def confirmation_email_enqueue(sender: Any, claim_id: uuid.UUID, **kwargs: Any) -> None:
    # claim_confirmed is sent after commit: the worker finds the claim and its
    # tickets. The sweep sends what was not enqueued.
    enqueue(confirmation_email_send, str(claim_id))


@receiver(claim_cancelled, dispatch_uid="storefront.cancellation_email")
def cancellation_email_enqueue(
    sender: Any, claim_id: uuid.UUID, reason: str, **kwargs: Any
) -> None:
    enqueue(cancellation_email_send, str(claim_id), reason)
