"""What the storefront does on news from the apps below it."""

from __future__ import annotations

import uuid
from typing import Any

from django.dispatch import receiver

from claims.signals import claim_confirmed
from storefront.tasks import confirmation_email_send


@receiver(claim_confirmed, dispatch_uid="storefront.confirmation_email")
def confirmation_email_enqueue(sender: Any, claim_id: uuid.UUID, **kwargs: Any) -> None:
    # claim_confirmed is sent after commit: the worker finds the claim and its
    # tickets. No publish retries: with the broker down this raises at once
    # (the signal's sender logs it) instead of holding up the webhook answer;
    # the sweep sends what was not enqueued.
    confirmation_email_send.apply_async(args=[str(claim_id)], retry=False)
