"""A per-process cache of small, short-lived read models (an event, a tier)
for the hot paths: joins, position reads and claims do not read the same row
on every request. Entries live ``ttl()`` seconds (asked on every store, so a
test that changes the owner's constant sees it at once); unknown ids are
cached too (as None), and a flood of them empties the cache rather than
growing it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

MAX_ENTRIES = 10_000


class SnapshotCache(Generic[T]):
    def __init__(
        self, load: Callable[[uuid.UUID | str], T | None], *, ttl: Callable[[], float]
    ) -> None:
        self._load = load
        self._ttl = ttl
        self._entries: dict[str, tuple[float, T | None]] = {}
        self._lock = threading.Lock()

    def get(self, key: uuid.UUID | str) -> T | None:
        name, now = str(key), time.monotonic()
        cached = self._entries.get(name)
        if cached is not None and cached[0] > now:
            return cached[1]
        value = self._load(key)
        ttl = self._ttl()
        with self._lock:
            if len(self._entries) > MAX_ENTRIES:
                self._entries.clear()
            self._entries[name] = (now + ttl, value)
        return value

    def forget(self, key: uuid.UUID | str | None = None) -> None:
        """One entry, or all of them."""
        with self._lock:
            if key is None:
                self._entries.clear()
            else:
                self._entries.pop(str(key), None)
