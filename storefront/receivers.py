"""What the storefront does on news from the apps below it."""

from __future__ import annotations

import uuid
from typing import Any

from django.dispatch import receiver

from claims.signals import (
    claim_cancelled,
    claim_confirmed,
    ticket_resold,
    ticket_return_closed,
    ticket_transfer_offered,
)
from fairqueue.news import enqueue
from queueing.signals import waitlist_offered
from storefront.tasks import (
    cancellation_email_send,
    confirmation_email_send,
    offer_email_send,
    return_email_send,
    transfer_email_send,
)


@receiver(claim_confirmed, dispatch_uid="storefront.confirmation_email")
def confirmation_email_enqueue(sender: Any, claim_id: uuid.UUID, **kwargs: Any) -> None:
    # claim_confirmed is sent after commit: the worker finds the claim and its
    # tickets. The sweep sends what was not enqueued.
    enqueue(confirmation_email_send, str(claim_id))


@receiver(waitlist_offered, dispatch_uid="storefront.offer_email")
def offer_email_enqueue(sender: Any, entry_id: uuid.UUID, **kwargs: Any) -> None:
    # The page and the socket tell the customer too; the sweep sends what
    # was not enqueued while the offer is open.
    enqueue(offer_email_send, str(entry_id))


@receiver(claim_cancelled, dispatch_uid="storefront.cancellation_email")
def cancellation_email_enqueue(
    sender: Any, claim_id: uuid.UUID, reason: str, **kwargs: Any
) -> None:
    enqueue(cancellation_email_send, str(claim_id), reason)


@receiver(ticket_resold, dispatch_uid="storefront.resold_email")
@receiver(ticket_return_closed, dispatch_uid="storefront.return_closed_email")
def return_email_enqueue(sender: Any, return_id: uuid.UUID, **kwargs: Any) -> None:
    # Resold, or back to its holder when returns closed; the sweep sends
    # what was not enqueued.
    enqueue(return_email_send, str(return_id))


@receiver(ticket_transfer_offered, dispatch_uid="storefront.transfer_email")
def transfer_email_enqueue(sender: Any, transfer_id: uuid.UUID, **kwargs: Any) -> None:
    # The sweep sends what was not enqueued.
    enqueue(transfer_email_send, str(transfer_id))
