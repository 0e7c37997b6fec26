"""Live pushes to WebSocket clients through the Channels layer.

Groups: one per event (everyone watching its queue) and one per customer per
event (their own admission / expiry). Messages are sent only after the
Postgres transaction that caused them has committed.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from fairqueue.redis import best_effort

logger = logging.getLogger(__name__)


# The channel-layer message type of every push; QueueConsumer.queue_push handles it.
PUSH_TYPE = "queue.push"


def event_group(event_id: object) -> str:
    return f"event.{event_id}"


def customer_group(event_id: object, customer_id: object) -> str:
    return f"event.{event_id}.customer.{customer_id}"


@best_effort(None)
def _group_send(group: str, message: dict[str, Any]) -> None:
    # The channel layer is Redis: while it is down a push is counted and
    # logged once a minute (the Redis-failure rule), not a traceback each.
    # Encoded once here, not by each of the group's sockets.
    envelope = {"type": PUSH_TYPE, "text": json.dumps(message)}
    async_to_sync(get_channel_layer().group_send)(group, envelope)


def _send(group: str, message: dict[str, Any]) -> None:
    try:
        _group_send(group, message)
    except Exception:  # a push is best effort: clients also poll their position
        logger.exception("broadcast to %s failed", group)


def push_after_commit(group: str, message: dict[str, Any]) -> None:
    transaction.on_commit(lambda: _send(group, message))


def push_now(group: str, message: dict[str, Any]) -> None:
    _send(group, message)
