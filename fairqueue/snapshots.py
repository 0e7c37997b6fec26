"""A per-process cache of small, short-lived read models (an event, a tier)
for the hot paths: joins, position reads and claims do not read the same row
on every request. Entries live ``ttl_setting`` seconds (read on every store,
so tests and settings overrides take effect at once); unknown ids are cached
too (as None), and a flood of them empties the cache rather than growing it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Generic, TypeVar

from django.conf import settings

T = TypeVar("T")

MAX_ENTRIES = 10_000


class SnapshotCache(Generic[T]):
    def __init__(self, load: Callable[[uuid.UUID | str], T | None], *, ttl_setting: str) -> None:
        self._load = load
        self._ttl_setting = ttl_setting
        self._entries: dict[str, tuple[float, T | None]] = {}
        self._lock = threading.Lock()

    def get(self, key: uuid.UUID | str) -> T | None:
        name, now = str(key), time.monotonic()
        cached = self._entries.get(name)
        if cached is not None and cached[0] > now:
            return cached[1]
        value = self._load(key)
        ttl = float(getattr(settings, self._ttl_setting, 1.0))
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
