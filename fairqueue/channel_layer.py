"""The channel layer: channels_redis' pub/sub layer, with pushes handed to
the sockets of this process by one task, in the order they arrived.

The stock layer puts each group message into the queue of every channel in
the group, and each consumer then wakes up on its own: a task step to read
its queue, a ``msgpack`` decode, ``asyncio.wait`` bookkeeping and a new task,
per socket per message. At 10,000 sockets one tick's position broadcast
alone was 10,000 such wake-ups, and the tick's ``admitted`` pushes (published
before it) waited in the same run queue behind them (admission push p99
~2 s, docs/BENCHMARKS.md).

Here a consumer may register a handler for its channel (``push_handler_add``,
``QueueConsumer`` does once it has sent its snapshot). A group message of the
push type (``fairqueue.broadcast.PUSH_TYPE``) is decoded once, and one task
per process calls the handlers of the group's registered channels, message
after message in arrival order: a tick's ``admitted`` pushes reach their
sockets before its broadcast starts. Every other message, and every channel
without a handler, takes the stock path. Which channels a group reaches is
still the layer's own (its ``groups`` and ``channels``), so a channel gone from
the layer gets nothing, as before.

Built on channels_redis 4.3's pub/sub internals (the loop layer's
``channels``/``groups`` and the shard's ``_receive_message``);
tests/fairqueue/test_channel_layer.py pins them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from channels_redis.pubsub import (
    RedisPubSubChannelLayer,
    RedisPubSubLoopLayer,
    RedisSingleShardConnection,
)
from channels_redis.utils import _wrap_close, decode_hosts

from fairqueue.broadcast import PUSH_TYPE

logger = logging.getLogger(__name__)

PushHandler = Callable[[dict[str, Any]], Awaitable[None]]

# Sends between two yields to the event loop: the sockets' writes go out and
# the layer's reader reads on while a broadcast reaches thousands of sockets.
SENDS_PER_YIELD = 64


class PushFanoutChannelLayer(RedisPubSubChannelLayer):
    """``CHANNEL_LAYERS`` backend: channels_redis' pub/sub layer plus the
    in-order push fan-out above."""

    def _get_layer(self) -> PushFanoutLoopLayer:
        loop = asyncio.get_running_loop()
        try:
            layer = self._layers[loop]
        except KeyError:
            layer = PushFanoutLoopLayer(*self._args, **self._kwargs, channel_layer=self)
            self._layers[loop] = layer
            _wrap_close(self, loop)
        return layer

    def push_handler_add(self, channel: str, handler: PushHandler) -> None:
        self._get_layer().push_handlers[channel] = handler

    def push_handler_discard(self, channel: str) -> None:
        self._get_layer().push_handlers.pop(channel, None)


class PushFanoutLoopLayer(RedisPubSubLoopLayer):
    def __init__(self, hosts: Any = None, **kwargs: Any) -> None:
        super().__init__(hosts, **kwargs)
        self._shards = [_Shard(host, self) for host in decode_hosts(hosts)]
        self.push_handlers: dict[str, PushHandler] = {}
        self._pending: deque[tuple[dict[str, Any], list[PushHandler]]] = deque()
        self._wake = asyncio.Event()
        self._fanout_task: asyncio.Task | None = None

    def fan_out(self, group_channel: str, data: bytes) -> bool:
        """Hand a group message to the registered handlers of its channels
        (in order, from the fan-out task); queue it for the others. False
        when nothing here applies (the stock path delivers it all)."""
        members = self.groups.get(group_channel)
        if not members or not self.push_handlers:
            return False
        message = self.channel_layer.deserialize(data)
        if message.get("type") != PUSH_TYPE:
            return False
        handlers = []
        for channel in members:
            queue = self.channels.get(channel)
            if queue is None:  # gone from the layer: nothing, as before
                self.push_handlers.pop(channel, None)
                continue
            handler = self.push_handlers.get(channel)
            if handler is None:
                queue.put_nowait(data)
            else:
                handlers.append(handler)
        if handlers:
            self._pending.append((message, handlers))
            self._wake.set()
            if self._fanout_task is None or self._fanout_task.done():
                self._fanout_task = asyncio.ensure_future(self._fan_out_forever())
        return True

    async def _fan_out_forever(self) -> None:
        sent = 0
        while True:
            if not self._pending:
                self._wake.clear()
                await self._wake.wait()
                continue
            message, handlers = self._pending.popleft()
            for handler in handlers:
                try:
                    await handler(message)
                except Exception:  # one socket's failure is not the others'
                    logger.exception("push to a socket failed")
                sent += 1
                if sent >= SENDS_PER_YIELD:
                    sent = 0
                    await asyncio.sleep(0)

    async def flush(self) -> None:
        if self._fanout_task is not None:
            self._fanout_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._fanout_task
            self._fanout_task = None
        self._pending.clear()
        self.push_handlers = {}
        await super().flush()


class _Shard(RedisSingleShardConnection):
    channel_layer: PushFanoutLoopLayer

    def _receive_message(self, message: Any) -> None:
        if message is not None:
            name = message["channel"]
            if isinstance(name, bytes):
                name = name.decode()
            if name in self.channel_layer.groups and self.channel_layer.fan_out(
                name, message["data"]
            ):
                return
        super()._receive_message(message)
