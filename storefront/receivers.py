"""What the storefront does on news from the apps below it."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.dispatch import receiver

from claims.signals import claim_cancelled, claim_confirmed, ticket_resold, ticket_transfer_offered
from fairqueue.news import enqueue
from queueing.signals import waitlist_offered
from storefront.tasks import (
    cancellation_email_send,
    confirmation_email_send,
    offer_email_send,
    resold_email_send,
    transfer_email_send,
)


@receiver(claim_confirmed, dispatch_uid="storefront.confirmation_email")
def confirmation_email_enqueue(sender: Any, claim_id: uuid.UUID, **kwargs: Any) -> None:
    # claim_confirmed is sent after commit: the worker finds the claim and its
    # tickets. The sweep sends what was not enqueued.
    enqueue(confirmation_email_send, str(claim_id))


@receiver(waitlist_offered, dispatch_uid="storefront.offer_email")
def offer_email_enqueue(
    sender: Any, event_id: uuid.UUID, customer_id: uuid.UUID, expires_at: datetime, **kwargs: Any
) -> None:
    # The page and the socket tell the customer too; a lost email is not swept.
    enqueue(offer_email_send, str(event_id), str(customer_id), expires_at.isoformat())


@receiver(claim_cancelled, dispatch_uid="storefront.cancellation_email")
def cancellation_email_enqueue(
    sender: Any, claim_id: uuid.UUID, reason: str, **kwargs: Any
) -> None:
    enqueue(cancellation_email_send, str(claim_id), reason)


@receiver(ticket_resold, dispatch_uid="storefront.resold_email")
def resold_email_enqueue(sender: Any, return_id: uuid.UUID, **kwargs: Any) -> None:
    enqueue(resold_email_send, str(return_id))


@receiver(ticket_transfer_offered, dispatch_uid="storefront.transfer_email")
def transfer_email_enqueue(sender: Any, transfer_id: uuid.UUID, **kwargs: Any) -> None:
    enqueue(transfer_email_send, str(transfer_id))
