"""The claim step's side of admission: is this admission token still good,
and, inside the claim's transaction, using it up."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime

import redis
from django.utils import timezone

from fairqueue.errors import ErrorCode, Forbidden
from queueing.domain import QueueStatus
from queueing.models import QueueEntry
from queueing.store import queue_store
from queueing.tokens import admission_token_read

logger = logging.getLogger(__name__)


def admission_verify(
    *, token: str, event_id: uuid.UUID | str, customer_id: uuid.UUID | str
) -> QueueEntry:
    """The admission token is genuine, for this event and customer, and its
    entry is still ADMITTED inside its window.

    Errors: 401 invalid_token (bad signature or format), 403 admission_invalid
    (another customer or event), 403 admission_expired (expired, revoked, not
    admitted). Redis' admitted set answers first; an entry it does not know
    (wiped Redis, or the token is from an older admission) is read from
    Postgres. The final word is ``queue_entry_complete`` inside the claim
    transaction, which only moves a still-valid ADMITTED entry."""
    admission = admission_token_read(token=token, event_id=event_id, customer_id=customer_id)
    now = timezone.now()
    try:
        until_ms = queue_store().admitted_until_ms(
            event_id=admission.event_id, customer_id=admission.customer_id
        )
    except redis.RedisError:
        until_ms = None
    # The token expires with the admission, so an admitted-set score equal to
    # the token's expiry (to the second) is this very admission.
    if until_ms is not None and abs(until_ms // 1000 - admission.expires_at.timestamp()) <= 1:
        if until_ms <= now.timestamp() * 1000:
            raise Forbidden("The admission has expired.", code=ErrorCode.ADMISSION_EXPIRED)
        # Built from the token and Redis, no database read: id, event_id,
        # customer_id, status and admission_expires_at are set, nothing else.
        known = QueueEntry(
            id=admission.queue_entry_id,
            event_id=admission.event_id,
            customer_id=admission.customer_id,
            status=QueueStatus.ADMITTED,
            admission_expires_at=datetime.fromtimestamp(until_ms / 1000, UTC),
        )
        known._state.adding, known._state.db = False, "default"
        return known
    entry = QueueEntry.objects.filter(
        pk=admission.queue_entry_id,
        event_id=admission.event_id,
        customer_id=admission.customer_id,
    ).first()
    if (
        entry is None
        or entry.status != QueueStatus.ADMITTED
        or entry.admission_expires_at is None
        or entry.admission_expires_at <= now
    ):
        raise Forbidden("The admission has expired.", code=ErrorCode.ADMISSION_EXPIRED)
    return entry


def queue_entry_complete(*, entry_id: uuid.UUID | str) -> bool:
    """ADMITTED -> COMPLETED, only while the admission window is open. Call it
    inside the claim transaction: False means the admission is no longer valid
    and the claim must not be made."""
    now = timezone.now()
    updated = QueueEntry.objects.filter(
        pk=entry_id, status=QueueStatus.ADMITTED, admission_expires_at__gt=now
    ).update(status=QueueStatus.COMPLETED, finished_at=now)
    return updated == 1


def admission_slot_release(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> None:
    """After the claim committed: the customer leaves the admitted set (best
    effort; the reconciliation drops members that are no longer ADMITTED)."""
    try:
        queue_store().release_admitted(event_id=event_id, customer_ids=[customer_id])
    except redis.RedisError:
        logger.warning("admission slot release: redis unavailable; reconciliation will heal")
