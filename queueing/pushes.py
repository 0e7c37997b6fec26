"""Many pushes at once (the admitted customers of a tick, each on their own
group) without one channel-layer round trip per customer.

``fairqueue.broadcast`` sends one message per ``group_send``: an awaited
PUBLISH behind a lock, about half a millisecond each, so 5,000 admissions cost
seconds. Here, with the Redis pub/sub layer on our own Redis (the project's
setting), the PUBLISH commands go out in one pipeline, serialised by the layer
itself, to the layer's server (``REDIS_URL``, never the hot-data cluster).
Any other layer gets the plain ``group_send`` loop. The consumer tests
receive through both paths.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels_redis.pubsub import RedisPubSubChannelLayer
from django.conf import settings

from fairqueue.broadcast import PUSH_TYPE, customer_group
from fairqueue.redis import best_effort, get_layer_redis

logger = logging.getLogger(__name__)

PIPELINE_CHUNK = 5_000


def _pubsub_prefix(layer: Any) -> str | None:
    """The group-channel prefix when ``layer`` is channels_redis' pub/sub
    layer on settings.REDIS_URL alone; None otherwise."""
    if not isinstance(layer, RedisPubSubChannelLayer):
        return None
    kwargs = getattr(layer, "_kwargs", {})
    if list(kwargs.get("hosts") or []) != [settings.REDIS_URL]:
        return None
    return kwargs.get("prefix", "asgi")


def _envelope(message: dict | str) -> dict:
    """A message for the sockets, as JSON text encoded once here (not once
    per socket: daphne forwards it as it is, QueueConsumer.queue_push)."""
    text = message if isinstance(message, str) else json.dumps(message)
    return {"type": PUSH_TYPE, "text": text}


@best_effort(None)
def _publish(layer: Any, prefix: str, messages: Sequence[tuple[str, dict | str]]) -> None:
    # channels_redis names a group's pub/sub channel "<prefix>__group__<group>".
    for start in range(0, len(messages), PIPELINE_CHUNK):
        pipe = get_layer_redis().pipeline(transaction=False)
        for group, message in messages[start : start + PIPELINE_CHUNK]:
            pipe.publish(f"{prefix}__group__{group}", layer.serialize(_envelope(message)))
        pipe.execute()


def send_many(messages: Sequence[tuple[str, dict | str]]) -> None:
    """Best effort (clients also poll their position): a Redis failure is
    counted and logged at most once a minute, like any Redis failure."""
    if not messages:
        return
    layer = get_channel_layer()
    prefix = _pubsub_prefix(layer) if len(messages) > 1 else None
    if prefix is not None:
        _publish(layer, prefix, messages)
        return

    try:
        _group_send_all(layer, messages)
    except Exception:  # a push is best effort: clients also poll their position
        logger.exception("queue pushes failed (%s messages)", len(messages))


@best_effort(None)
def _group_send_all(layer: Any, messages: Sequence[tuple[str, dict | str]]) -> None:
    """Through the channel layer (Redis too: a failure is counted and logged
    once a minute, the Redis-failure rule)."""

    async def send() -> None:
        for group, message in messages:
            await layer.group_send(group, _envelope(message))

    async_to_sync(send)()


def send_expired(*, event_id: object, customer_ids: list, reason: str) -> None:
    """Tell each customer their admission is over (``admission_window`` or
    ``sale_ended``), on their own group."""
    send_many(
        [
            (
                customer_group(event_id, customer_id),
                {"type": "expired", "event_id": str(event_id), "reason": reason},
            )
            for customer_id in customer_ids
        ]
    )
