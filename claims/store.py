"""Redis state of the claims app: the per (event, customer) claim lock and the
single-flight locks of the periodic tasks. Nothing here is needed for
correctness (Postgres refuses oversell and double purchases by itself); the
locks turn duplicate work away early."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fairqueue.redis import RedisStore, event_key

# Longer than any claim takes; a crashed claimer's lock frees itself.
CLAIM_LOCK_TTL_MS = 10_000


class ClaimStore(RedisStore):
    scripts_dir = Path(__file__).parent / "lua"
    script_names = ("unlock",)

    @staticmethod
    def claim_lock_key(event_id: object, customer_id: object) -> str:
        return event_key(event_id, "claim-lock", customer_id)

    @staticmethod
    def task_lock_key(name: str) -> str:
        return f"fq:task-lock:{name}"

    def lock_acquire(self, key: str, *, ttl_ms: int) -> str | None:
        """``SET NX PX``: the token to release with, or None when held."""
        token = secrets.token_hex(16)
        return token if self.r.set(key, token, nx=True, px=ttl_ms) else None

    def lock_release(self, key: str, token: str) -> bool:
        return bool(self.scripts["unlock"](keys=[key], args=[token]))

    @contextmanager
    def single_flight(self, name: str, *, ttl_ms: int) -> Iterator[bool]:
        """Yields True for the one caller that holds the task lock."""
        key = self.task_lock_key(name)
        token = self.lock_acquire(key, ttl_ms=ttl_ms)
        try:
            yield token is not None
        finally:
            if token is not None:
                self.lock_release(key, token)


_store: ClaimStore | None = None


def claim_store() -> ClaimStore:
    global _store
    if _store is None:
        _store = ClaimStore()
    return _store
