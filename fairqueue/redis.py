"""The shared Redis client and the base class for per-app Redis stores.

Redis is a performance layer: every key here can be rebuilt from Postgres.
Keys of one event share the hash tag ``{<event_id>}`` so that multi-key Lua
scripts stay legal on Redis Cluster.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any

import redis
from django.conf import settings

_client: redis.Redis | None = None
_client_lock = threading.Lock()


def get_redis() -> redis.Redis:
    """One connection pool per process; short timeouts so a dead Redis fails fast."""
    global _client
    if _client is None:
        with _client_lock:
            if _client is None:
                _client = redis.Redis.from_url(
                    settings.REDIS_URL,
                    decode_responses=True,
                    socket_timeout=settings.REDIS_SOCKET_TIMEOUT,
                    socket_connect_timeout=2,
                    health_check_interval=30,
                    max_connections=256,
                )
    return _client


def event_key(event_id: Any, *parts: Any) -> str:
    """``fq:{<event_id>}:part:part`` - all keys of one event in one hash slot."""
    return ":".join(["fq", f"{{{event_id}}}", *map(str, parts)])


@functools.cache
def _lua_source(path: Path) -> str:
    return path.read_text()


class RedisStore:
    """Base for a small per-app store: loads the ``.lua`` files next to the
    subclass once, and registers them as scripts (EVALSHA, re-loaded by
    redis-py after a Redis restart)."""

    scripts_dir: Path | None = None
    script_names: tuple[str, ...] = ()

    def __init__(self, client: redis.Redis | None = None) -> None:
        self.r = client or get_redis()
        self.scripts: dict[str, Any] = {}
        base = self.scripts_dir or Path(__file__).parent
        for name in self.script_names:
            self.scripts[name] = self.r.register_script(_lua_source(base / f"{name}.lua"))
