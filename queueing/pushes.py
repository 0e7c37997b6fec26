"""Pushes of the waiting room through the channel layer.

Two kinds:
- the admission tick's one message per tick to every daphne process that
  holds sockets of the event (``send_line``, group ``line_group``): the line
  state plus each admitted or expired customer's own news; each process's
  registry (``queueing.line_sockets``) hands it to its sockets;
- everything else, one message per group (``send_many``): a customer's news
  outside a tick (a window given back, an admission Redis missed), the end
  of a sale, seat-map changes. Few per tick, so a ``group_send`` each.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from fairqueue.broadcast import PUSH_TYPE, customer_group, event_group
from fairqueue.redis import best_effort
from queueing.domain import EndReason

logger = logging.getLogger(__name__)

# The channel-layer message type of the tick's message (LineRegistry.receive).
LINE_TYPE = "queue.line"


def line_group(event_id: object) -> str:
    """One member per daphne process holding sockets of the event."""
    return f"event.{event_id}.line"


# A customer's own news that takes them out of the line.
OUT_OF_LINE = ("admitted", "expired")


def _envelope(message: dict | str) -> dict:
    """A message for the sockets, as JSON text encoded once here (not once
    per socket: daphne forwards it as it is, QueueConsumer.queue_push);
    ``out_of_line`` when it takes the customer out of the line (their
    sockets leave the registry's line order)."""
    if isinstance(message, str):
        return {"type": PUSH_TYPE, "text": message}
    envelope: dict[str, Any] = {"type": PUSH_TYPE, "text": json.dumps(message)}
    if message.get("type") in OUT_OF_LINE:
        envelope["out_of_line"] = True
    return envelope


def send_many(messages: Sequence[tuple[str, dict | str]]) -> None:
    """Best effort (pages also read the line state): a Redis failure is
    counted and logged at most once a minute, like any Redis failure."""
    if not messages:
        return
    try:
        _group_send_all(messages)
    except Exception:  # a push is best effort: pages also read the line state
        logger.exception("queue pushes failed (%s messages)", len(messages))


@best_effort(None)
def _group_send_all(messages: Sequence[tuple[str, dict | str]]) -> None:
    layer = get_channel_layer()

    async def send() -> None:
        for group, message in messages:
            await layer.group_send(group, _envelope(message))

    async_to_sync(send)()


@best_effort(None)
def send_line(
    *,
    event_id: object,
    state: str,
    served: int,
    admitted: int,
    epoch: int,
    news: list[tuple[str, str]],
) -> None:
    """The tick's one message: ``state`` (the line state's JSON), how many it
    admitted, and ``news``: (customer id, JSON text) of each customer the
    tick admitted or expired."""
    message: dict[str, Any] = {
        "type": LINE_TYPE,
        "state": state,
        "served": served,
        "admitted": admitted,
        "epoch": epoch,
        "news": [list(item) for item in news],
    }
    async_to_sync(get_channel_layer().group_send)(line_group(event_id), message)


def expired_text(*, event_id: object, reason: str) -> str:
    return json.dumps({"type": "expired", "event_id": str(event_id), "reason": reason})


def send_expired(*, event_id: object, customer_ids: list, reason: str) -> None:
    """Tell each customer their admission is over (``admission_window``), on
    their own group."""
    message = {"type": "expired", "event_id": str(event_id), "reason": reason}
    send_many([(customer_group(event_id, customer_id), message) for customer_id in customer_ids])


def send_sale_ended(*, event_id: object) -> None:
    """The sale ended: one message to everyone on the event (each page stops
    and says so), not one per customer."""
    text = expired_text(event_id=event_id, reason=EndReason.SALE_ENDED.value)
    send_many([(event_group(event_id), text)])
