"""Reads of events that need care."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from events.domain import EventStatus
from events.models import Event
from fairqueue.errors import ErrorCode, NotFound


def events_public() -> QuerySet[Event]:
    """Events customers may see: everything but drafts."""
    return Event.objects.exclude(status=EventStatus.DRAFT).prefetch_related("tiers")


def event_public_get(*, event_id: uuid.UUID | str) -> Event:
    event = events_public().filter(pk=event_id).first()
    if event is None:
        raise NotFound("No such event.", code=ErrorCode.EVENT_NOT_FOUND)
    return event


def events_live() -> QuerySet[Event]:
    return Event.objects.filter(
        status__in=[EventStatus.ACTIVE, EventStatus.PAUSED, EventStatus.SOLD_OUT]
    )
