"""Live seat-map deltas on the event's WebSocket, batched and throttled.

A reserved tier's seats change one by one (a hold, a sale, an expiry, a
release), thousands a second at the opening of a sale. Pushing each change
to every watcher of the event would cost one PUBLISH per seat and one frame
per seat per socket. Instead each process buffers the changes of a tier and
sends at most one ``seats`` message per tier per ``INTERVAL_SECONDS``
(the latest status of each changed seat, in the order they changed):

    {"type": "seats", "tier_id": "...", "version": 42, "since": 37,
     "changes": [{"label": "A-12", "status": "held"}, ...]}

on the event's group (everyone with the event's queue socket open), as JSON
text encoded once (not per socket), through the sender of the app that owns
the sockets: queueing gives ``queueing.pushes.send_many`` at start-up
(``seat_pushes_connect``), and several tiers due together go out in one
pipeline. ``version`` and ``since`` are the highest and lowest seat-map
versions the changes carried
(``None`` when the sender gave none): a page whose map is at ``version`` or
later skips the delta; one whose map is between the two applies it and reads
the map again (some changes may be older than its map). A push is best
effort: the page also reloads the map after a conflict, when its socket comes
back and with each poll while it is down.

The first change of a quiet tier goes out at once (the flusher thread wakes
for it); the following ones wait out the interval. The flusher is a daemon
thread started on first use in each process (after a fork too).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from django.db import transaction

from fairqueue.broadcast import event_group
from inventory.signals import seats_changed

logger = logging.getLogger(__name__)

# A second holds thousands of changes at the opening of a sale: a few
# messages a second per tier keep the map live without a frame per seat.
INTERVAL_SECONDS = 0.3
SEATS_TYPE = "seats"
STATUSES = frozenset({"available", "held", "sold", "blocked"})
_FORGET_AFTER = 60.0  # seconds without a change before a tier's send time is dropped

Key = tuple[str, str]  # (event_id, tier_id)
Sender = Callable[[list[tuple[str, dict | str]]], None]


class SeatDeltaBuffer:
    """Per-process buffer of seat changes, flushed per tier at most once per
    ``interval`` seconds by a daemon thread (or by ``flush`` in tests)."""

    def __init__(self, *, interval: float | None = None, send: Sender | None = None) -> None:
        self._interval = interval
        self._send = send  # None: the sockets' sender (``seat_pushes_connect``)
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._pending: dict[Key, dict[str, str]] = {}
        self._versions: dict[Key, tuple[int, int] | None] = {}  # (lowest, highest)
        self._last_sent: dict[Key, float] = {}
        self._thread: threading.Thread | None = None
        self.messages_sent = 0

    @property
    def interval(self) -> float:
        if self._interval is not None:
            return self._interval
        return INTERVAL_SECONDS

    def add(
        self,
        *,
        event_id: object,
        tier_id: object,
        changes: Iterable[dict[str, Any]],
        version: int | None = None,
        start: bool = True,
    ) -> None:
        if os.getpid() != self._pid:  # forked (gunicorn, Celery): a fresh buffer and thread
            self._reset()
        key = (str(event_id), str(tier_id))
        with self._lock:
            pending = self._pending.setdefault(key, {})
            for change in changes:
                label, status = change.get("label"), change.get("status")
                if not isinstance(label, str) or status not in STATUSES:
                    continue
                pending.pop(label, None)  # re-inserted: the order is the order of the last change
                pending[label] = status
            if isinstance(version, int):
                known = self._versions.get(key)
                self._versions[key] = (
                    (version, version)
                    if known is None
                    else (min(known[0], version), max(known[1], version))
                )
            else:
                self._versions.setdefault(key, None)
            if start and self._thread is None:
                self._thread = threading.Thread(target=self._run, name="seat-deltas", daemon=True)
                self._thread.start()
        self._wake.set()

    def _take_due(self, now: float, *, everything: bool = False) -> tuple[list, float | None]:
        """The messages due now, and how long until the next one is due."""
        messages: list[tuple[str, dict]] = []
        wait: float | None = None
        interval = self.interval
        with self._lock:
            for key in list(self._pending):
                changes = self._pending[key]
                if not changes:
                    del self._pending[key]
                    continue
                due = self._last_sent.get(key, -interval) + interval
                if not everything and due > now:
                    wait = due - now if wait is None else min(wait, due - now)
                    continue
                event_id, tier_id = key
                versions = self._versions.pop(key, None)
                message = {
                    "type": SEATS_TYPE,
                    "tier_id": tier_id,
                    "version": versions[1] if versions else None,
                    "since": versions[0] if versions else None,
                    "changes": [{"label": lb, "status": st} for lb, st in changes.items()],
                }
                messages.append((event_group(event_id), message))
                del self._pending[key]
                self._last_sent[key] = now
            for key, sent in list(self._last_sent.items()):
                if now - sent > _FORGET_AFTER and key not in self._pending:
                    del self._last_sent[key]
        return messages, wait

    def _deliver(self, messages: list[tuple[str, dict]]) -> None:
        if not messages:
            return
        try:
            # Encoded once here: every socket gets the same text (a batch can
            # be large; daphne forwards it without encoding it per socket).
            send = self._send or _socket_sender
            if send is None:  # no app owns the sockets here (a process without queueing)
                return
            send([(group, json.dumps(m, separators=(",", ":"))) for group, m in messages])
            self.messages_sent += len(messages)
        except Exception:  # best effort: the page reloads the map on a conflict or reconnect
            logger.exception("seat deltas failed (%s messages)", len(messages))

    def flush(self) -> None:
        """Send everything buffered now, throttle or not (tests, shutdown)."""
        messages, _ = self._take_due(time.monotonic(), everything=True)
        self._deliver(messages)

    def _run(self) -> None:
        wait: float | None = None
        while True:
            self._wake.wait(timeout=wait if wait is not None else 30.0)
            self._wake.clear()
            messages, wait = self._take_due(time.monotonic())
            self._deliver(messages)


seat_deltas = SeatDeltaBuffer()


def on_seats_changed(
    sender: Any,
    *,
    event_id: object,
    tier_id: object,
    changes: list[dict[str, Any]],
    version: int | None = None,
    **kwargs: Any,
) -> None:
    """Receiver of ``inventory.signals.seats_changed`` (sent after commit;
    inside a transaction it would wait for the commit): buffered, and sent by
    the flusher thread."""
    changes = list(changes)
    transaction.on_commit(
        lambda: seat_deltas.add(
            event_id=event_id, tier_id=tier_id, changes=changes, version=version
        )
    )


_socket_sender: Sender | None = None


def seat_pushes_connect(send: Sender) -> None:
    """Seat changes go out on the event's sockets through ``send`` (the app
    that owns the sockets gives it at start-up: queueing's ``send_many``;
    inventory imports no app above it)."""
    global _socket_sender
    _socket_sender = send
    seats_changed.connect(on_seats_changed, dispatch_uid="inventory.seating.pushes")
