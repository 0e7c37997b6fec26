"""The queue sockets of one event in one daphne process, in line order, fed by
the admission tick's one message (``queueing.pushes.send_line``).

Sockets carry news, not the clock. Per tick, the process's registry:
- hands each admitted or expired customer their own news (every socket of
  theirs here);
- sends the line state to the sockets whose place after the tick is within
  the tick's batch (the next to be admitted: they hear the line every tick),
  one per customer;
- sends it to ``waiting sockets // FAR_SHARE`` of the others, in turn, so a
  socket further back hears the line about every FAR_SHARE ticks;
- nothing more when the tick admitted nobody (the line did not move);
- when the epoch changed (the pre-queue draw), the state once to every
  socket whose number belongs to the old one (event-wide news, once per
  sale), and places those sockets again from the waiting set: one round
  trip to Redis per process (a ZRANK per customer, off the event loop),
  their number ``rank + 1 + served`` as the set has them; those the set
  does not hold, or all when Redis cannot say, stay unplaced (the far turn)
  until their next snapshot.

Summed over processes, a tick costs at most ``2 x admitted + sockets /
FAR_SHARE`` frames with one socket per customer (a customer's second tab
gets its own news too). The tick's message reaches the process once: the
registry is the process's one member of the event's line group, so the work
per tick is the frames sent (a bisect finds the near ones), never a wake-up
per socket held.

A socket's place is counted the way its page counts it: its number is
``position + served`` at its last snapshot, its place ``number - served``
now, never better than the truth (someone who left ahead makes the truth
better, never worse).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import itertools
import logging
import weakref
from typing import Any, Protocol

from asgiref.sync import sync_to_async

from queueing.pushes import LINE_TYPE, line_group
from queueing.store import queue_store

logger = logging.getLogger(__name__)

# A socket further back hears the line about once every this many ticks.
FAR_SHARE = 6
# Sends between two yields to the event loop, so the reader and the
# sockets' writes go on while a tick reaches many sockets.
SENDS_PER_YIELD = 64
# The number of a socket with no place (the waiting set did not say after an
# epoch change, or its snapshot had none): after every placed one, in the
# far turn.
UNPLACED = 2**62


class LineSocket(Protocol):
    customer_id: Any

    async def send_text(self, text: str) -> None: ...


class _Entry:
    __slots__ = ("epoch", "key", "socket")

    def __init__(self, socket: LineSocket, key: tuple[int, int], epoch: int | None) -> None:
        self.socket, self.key, self.epoch = socket, key, epoch


class LineSockets:
    """The registry of one event in one event loop (``line_sockets``)."""

    def __init__(self, event_id: str, layer: Any) -> None:
        self.event_id, self.layer = event_id, layer
        self.order: list[tuple[int, int]] = []  # (number, seq) of every waiting socket
        self.entries: dict[int, _Entry] = {}  # seq -> entry, waiting sockets only
        self.seq_of: dict[LineSocket, int] = {}  # every socket here, waiting or not
        self.by_customer: dict[str, set[LineSocket]] = {}
        self.epoch: int | None = None
        self.cursor: tuple[int, int] = (-1, -1)  # the far turn goes on after this key
        self.frames = 0  # frames sent from tick messages (tests, benchmarks)
        self._seq = itertools.count()
        self._channel: str | None = None
        self._ready: asyncio.Future | None = None
        self._reader: asyncio.Task | None = None

    # --- sockets -----------------------------------------------------------------------

    async def add(self, socket: LineSocket) -> None:
        """A socket of this event opened here; it hears the tick's news from
        now on (its place once ``place`` is called)."""
        self.seq_of[socket] = next(self._seq)
        self.by_customer.setdefault(str(socket.customer_id), set()).add(socket)
        if self._ready is None:
            self._ready = asyncio.ensure_future(self._subscribe())
        await asyncio.shield(self._ready)

    def place(
        self, socket: LineSocket, *, waiting: bool, number: int | None, epoch: int | None
    ) -> None:
        """Its snapshot: WAITING with ``number`` (position + served) in
        ``epoch``, or not waiting (out of the line order). A snapshot of an
        older epoch than the line's leaves it unplaced (its page
        learns its number again)."""
        seq = self.seq_of.get(socket)
        if seq is None:
            return
        self._unplace(seq)
        if not waiting:
            return
        known = number is not None and (self.epoch is None or epoch == self.epoch)
        key = (number if known and number is not None else UNPLACED, seq)
        self.entries[seq] = _Entry(socket, key, epoch)
        bisect.insort(self.order, key)

    async def remove(self, socket: LineSocket) -> None:
        seq = self.seq_of.pop(socket, None)
        if seq is None:
            return
        self._unplace(seq)
        customer = str(socket.customer_id)
        mine = self.by_customer.get(customer)
        if mine is not None:
            mine.discard(socket)
            if not mine:
                del self.by_customer[customer]
        if not self.seq_of:
            await self._unsubscribe()

    def _unplace(self, seq: int) -> None:
        entry = self.entries.pop(seq, None)
        if entry is not None:
            index = bisect.bisect_left(self.order, entry.key)
            if index < len(self.order) and self.order[index] == entry.key:
                del self.order[index]

    # --- the tick's message ------------------------------------------------------------

    async def receive(self, message: dict[str, Any]) -> int:
        """One tick: returns the frames it sent here."""
        sent = 0
        state: str = message["state"]
        served, admitted, epoch = message["served"], message["admitted"], message["epoch"]
        for customer, text in message.get("news", ()):
            for socket in list(self.by_customer.get(customer, ())):
                seq = self.seq_of.get(socket)
                if seq is not None:
                    self._unplace(seq)  # admitted or expired: out of the line
                sent += await self._send(socket, text, sent)
        if self.epoch != epoch:
            self.epoch = epoch
            sent += await self._new_epoch(state, epoch, served, sent)
        if admitted > 0:
            sent += await self._line_moved(state, served, admitted, sent)
        self.frames += sent
        return sent

    async def _new_epoch(self, state: str, epoch: int, served: int, sent: int) -> int:
        """Everyone whose number belongs to another epoch hears the state
        once, and is placed at its number in the new one (unplaced when the
        waiting set does not say)."""
        stale = [(seq, entry) for seq, entry in self.entries.items() if entry.epoch != epoch]
        numbers = await self._numbers({str(e.socket.customer_id) for _, e in stale}, served)
        frames = 0
        for seq, entry in stale:
            if self.entries.get(seq) is not entry:  # gone or placed meanwhile
                continue
            self._unplace(seq)
            number = numbers.get(str(entry.socket.customer_id))
            if number is not None:
                entry.epoch = epoch
            entry.key = (UNPLACED if number is None else number, seq)
            self.entries[seq] = entry
            bisect.insort(self.order, entry.key)
            frames += await self._send(entry.socket, state, sent + frames)
        return frames

    async def _numbers(self, customers: set[str], served: int) -> dict[str, int]:
        """Each customer's number (rank + 1 + served) in the event's waiting
        set; those it does not hold are left out, and everyone when Redis
        cannot say (the store logs it)."""
        if not customers:
            return {}
        answer = await sync_to_async(queue_store().places, thread_sensitive=False)(
            event_id=self.event_id, customer_ids=sorted(customers)
        )
        if answer is None:
            return {}
        served_now, places = answer
        base = served if served_now is None else served_now
        return {customer: place + base for customer, place in places.items()}

    async def _line_moved(self, state: str, served: int, admitted: int, sent: int) -> int:
        frames = 0
        # Near: place after the tick in 1..admitted (number in served+1 ..
        # served+admitted), one frame per customer.
        low = bisect.bisect_right(self.order, (served, UNPLACED))
        high = bisect.bisect_right(self.order, (served + admitted, UNPLACED))
        told: set[str] = set()
        for key in self.order[low:high]:
            socket = self.entries[key[1]].socket
            customer = str(socket.customer_id)
            if customer in told:
                continue
            told.add(customer)
            frames += await self._send(socket, state, sent + frames)
        # Far: a share of the waiting sockets in turn, after the near ones
        # (from the cursor on, then again from the first far one).
        budget = min(len(self.order) - high, len(self.order) // FAR_SHARE)
        if budget:
            start = max(high, bisect.bisect_right(self.order, self.cursor))
            turn = self.order[start : start + budget]
            turn += self.order[high : min(start, high + budget - len(turn))]
            for key in turn:
                frames += await self._send(self.entries[key[1]].socket, state, sent + frames)
            self.cursor = turn[-1]
        return frames

    async def _send(self, socket: LineSocket, text: str, sent: int) -> int:
        try:
            await socket.send_text(text)
        except Exception:  # one socket's failure is not the others'
            logger.exception("queue push to a socket failed")
        if (sent + 1) % SENDS_PER_YIELD == 0:
            await asyncio.sleep(0)
        return 1

    # --- the process's one member of the line group ------------------------------------

    async def _subscribe(self) -> None:
        self._channel = await self.layer.new_channel()
        await self.layer.group_add(line_group(self.event_id), self._channel)
        self._reader = asyncio.ensure_future(self._read(self._channel))

    async def _read(self, channel: str) -> None:
        while True:
            message = await self.layer.receive(channel)
            if message.get("type") != LINE_TYPE:
                continue
            try:
                await self.receive(message)
            except Exception:  # the next tick must still be heard
                logger.exception("line message of event %s failed", self.event_id)

    async def _unsubscribe(self) -> None:
        _forget(self)
        if self._ready is not None:
            with contextlib.suppress(Exception):
                await self._ready
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        if self._channel is not None:
            with contextlib.suppress(Exception):
                await self.layer.group_discard(line_group(self.event_id), self._channel)


# One registry per event per event loop (daphne runs one loop; tests run several).
_registries: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, LineSockets]] = (
    weakref.WeakKeyDictionary()
)


def line_sockets(layer: Any, event_id: object) -> LineSockets:
    """This process's registry of the event (made on first use)."""
    per_loop = _registries.setdefault(asyncio.get_running_loop(), {})
    registry = per_loop.get(str(event_id))
    if registry is None:
        registry = per_loop[str(event_id)] = LineSockets(str(event_id), layer)
    return registry


def _forget(registry: LineSockets) -> None:
    per_loop = _registries.get(asyncio.get_running_loop(), {})
    if per_loop.get(registry.event_id) is registry:
        del per_loop[registry.event_id]
