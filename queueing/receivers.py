"""What queueing does on news from the apps below it."""

from __future__ import annotations

import uuid
from typing import Any

from fairqueue.news import enqueue
from queueing.models import WaitlistState
from queueing.tasks import waitlist_offer


def offers_on_tickets_freed(
    sender: Any, event_id: uuid.UUID | str, tier_id: uuid.UUID | str, quantity: int, **kwargs: Any
) -> None:
    """Tickets came back: an event whose waiting list is open offers them to
    its next entries at once (the admission tick's round is the safety net
    for a lost enqueue). Events that never sold out cost one lookup."""
    if WaitlistState.objects.filter(event_id=event_id).exists():
        enqueue(waitlist_offer, str(event_id))
