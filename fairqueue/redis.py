"""The shared Redis client, the base class for per-app Redis stores, and the
one rule for Redis failures.

Redis is a performance layer: every key here can be rebuilt from Postgres.
Keys of one event share the hash tag ``{<event_id>}`` so that multi-key Lua
scripts stay legal on Redis Cluster.

The failure rule: a store catches its own backend's errors and says what they
mean, so no caller ever sees ``RedisError``. Each store method is either

- ``@required``: the caller cannot go on without it; a Redis failure becomes
  ``RedisUnavailable`` (503 ``busy`` with Retry-After for an API client), or
- ``@best_effort(default)``: the caller has a Postgres way round; a Redis
  failure is logged (once per ``what`` per minute) and counted, and the
  method returns ``default`` (None, 0, False...), which callers treat as
  "Redis does not know".
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import redis
from django.conf import settings
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from fairqueue.errors import Busy

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")
D = TypeVar("D")

_client: redis.Redis | None = None
_client_lock = threading.Lock()


def make_client(url: str) -> redis.Redis:
    """A client that fails fast when Redis is gone: short timeouts, and one
    quick retry (a pooled connection that a Redis restart broke is replaced
    once) instead of redis-py's default of ten retries with backoff, which
    holds every request of an outage for seconds per command. Its pool makes
    a thread wait for a free connection (up to the socket timeout) rather
    than fail at once when every connection is in use: a busy process is not
    a Redis outage, and must not send its claims down the Postgres-only path."""
    pool = redis.BlockingConnectionPool.from_url(
        url,
        max_connections=256,
        timeout=settings.REDIS_SOCKET_TIMEOUT,
        decode_responses=True,
        socket_timeout=settings.REDIS_SOCKET_TIMEOUT,
        socket_connect_timeout=2,
        health_check_interval=30,
        retry=Retry(ExponentialBackoff(cap=0.05, base=0.01), 1),
    )
    return redis.Redis(connection_pool=pool)


def get_redis() -> redis.Redis:
    """One connection pool per process (``make_client``)."""
    global _client
    if _client is None:
        with _client_lock:
            if _client is None:
                _client = make_client(settings.REDIS_URL)
    return _client


def text(value: str | bytes) -> str:
    """A reply as text. The shared client decodes replies (``decode_responses``),
    which redis-py's types cannot know; a client made without it gives bytes."""
    return value.decode() if isinstance(value, bytes) else value


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


# --- the failure rule -------------------------------------------------------------


class RedisUnavailable(Busy):
    message = "Temporarily unavailable; retry shortly."


_LOG_EVERY_SECONDS = 60.0
_last_logged: dict[str, float] = {}
_failures = 0
_failure_listeners: list[Callable[[str], None]] = []


def redis_failed(what: str) -> None:
    """Count one Redis failure and log it, at most once a minute per ``what``
    (an outage must not turn every request into a log line)."""
    global _failures
    _failures += 1
    for listener in _failure_listeners:
        listener(what)
    now = time.monotonic()
    if now - _last_logged.get(what, -_LOG_EVERY_SECONDS) >= _LOG_EVERY_SECONDS:
        _last_logged[what] = now
        logger.warning("redis unavailable: %s (Postgres carries on; Redis is healed later)", what)


def redis_failures() -> int:
    """Redis failures counted by this process since it started."""
    return _failures


def on_redis_failure(listener: Callable[[str], None]) -> None:
    """Call ``listener(what)`` on every counted failure (metrics hook)."""
    _failure_listeners.append(listener)


def required(method: Callable[P, T]) -> Callable[P, T]:
    """A store method the caller cannot do without: RedisError -> RedisUnavailable."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(*args, **kwargs)
        except redis.RedisError as exc:
            redis_failed(method.__qualname__)
            raise RedisUnavailable() from exc

    setattr(wrapper, "redis_failure", "required")  # noqa: B010  (what the tests check)
    return wrapper


def best_effort(default: D) -> Callable[[Callable[P, T]], Callable[P, T | D]]:
    """A store method with a Postgres way round: RedisError -> ``default``."""

    def decorate(method: Callable[P, T]) -> Callable[P, T | D]:
        @functools.wraps(method)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> T | D:
            try:
                return method(*args, **kwargs)
            except redis.RedisError:
                redis_failed(method.__qualname__)
                return default

        setattr(wrapper, "redis_failure", "best_effort")  # noqa: B010  (what the tests check)
        return wrapper

    return decorate
