"""The shared Redis client, the base class for per-app Redis stores, and the
one rule for Redis failures.

Redis is a performance layer: every key here can be rebuilt from Postgres.
Keys of one event share the hash tag ``{<event_id>}`` so that multi-key Lua
scripts stay legal on Redis Cluster.

Two clients: ``get_redis()``, the hot data (queue, admission, inventory,
locks, sign-in limits, socket tickets, sign-out state) on Redis Cluster when
``REDIS_CLUSTER_URL`` names one, else on ``REDIS_URL``; and
``get_layer_redis()``, the server at ``REDIS_URL`` that the Channels layer
and Celery's broker use (neither speaks Cluster). Without a cluster both are
one client.

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
from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import RedisClusterException
from redis.retry import Retry

from fairqueue.errors import Busy

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")
D = TypeVar("D")

# A store's client: one server, or a cluster (every command a store sends
# names keys of one hash slot, which both serve alike).
Client = redis.Redis | RedisCluster

# What counts as a Redis failure: redis-py's errors, and the cluster client's
# own that are not RedisErrors (no seed node reachable, a slot no node serves).
REDIS_FAILURES: tuple[type[Exception], ...] = (redis.RedisError, RedisClusterException)

_REDIS_PY = Path(redis.__file__).parent


def _torn_connection(exc: BaseException) -> bool:
    """An AttributeError raised inside redis-py itself: a pooled connection
    torn down by another thread while this one read from it. redis-py's
    cluster client does that when a node fails (it refreshes the slot map
    and drops that node's connections under the threads using them); for the
    caller it is one more lost connection."""
    if not isinstance(exc, AttributeError) or exc.__traceback__ is None:
        return False
    tb = exc.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return Path(tb.tb_frame.f_code.co_filename).is_relative_to(_REDIS_PY)


_client: Client | None = None
_layer_client: redis.Redis | None = None
_client_lock = threading.Lock()


def make_client(url: str) -> redis.Redis:
    """A client that fails fast when Redis is gone: short timeouts, and one
    quick retry (a pooled connection that a Redis restart broke is replaced
    once) instead of redis-py's default of ten retries with backoff, which
    holds every request of an outage for seconds per command. Its pool makes
    a thread wait for a free connection (up to the socket timeout) rather
    than fail at once when every connection is in use: a busy process is not
    a Redis outage, and must not send its claims down the Postgres-only path."""
    pool = redis.BlockingConnectionPool.from_url(url, **_connection_options())
    return redis.Redis(connection_pool=pool)


def _connection_options() -> dict[str, Any]:
    """What a hot-data connection pool is (one server, or each node of a
    cluster): up to 256 connections, waiting up to the socket timeout for a
    free one, short timeouts, one quick retry."""
    return {
        "max_connections": 256,
        "timeout": settings.REDIS_SOCKET_TIMEOUT,
        "decode_responses": True,
        "socket_timeout": settings.REDIS_SOCKET_TIMEOUT,
        "socket_connect_timeout": 2,
        "health_check_interval": 30,
        "retry": Retry(ExponentialBackoff(cap=0.05, base=0.01), 1),
    }


def cluster_seeds(spec: str) -> list[str]:
    """``"redis://h1:7000, redis://h2:7000"`` -> the seed URLs."""
    return [url.strip() for url in spec.split(",") if url.strip()]


def make_cluster_client(spec: str) -> RedisCluster:
    """A Redis Cluster client from comma-separated seed URLs (they share the
    first one's credentials and TLS), failing as fast as ``make_client``:
    short timeouts, one retry of a command after a broken connection or a
    moved slot (the client then reads the slot map again), and per node the
    same waiting pool. Connects to a seed at once (the slot map):
    ``RedisClusterException`` when none answers."""
    first, *others = cluster_seeds(spec)
    startup = []
    for url in others:
        parsed = redis.connection.parse_url(url)
        startup.append(ClusterNode(parsed.get("host", "localhost"), parsed.get("port", 6379)))
    return RedisCluster(
        url=first,
        startup_nodes=startup,
        connection_pool_class=redis.BlockingConnectionPool,
        **_connection_options(),
    )


def cluster_url() -> str:
    """``REDIS_CLUSTER_URL``, empty when the hot data lives at ``REDIS_URL``."""
    return str(getattr(settings, "REDIS_CLUSTER_URL", "") or "")


def get_redis() -> Client:
    """The hot data's client, one per process: the cluster's
    (``make_cluster_client``) when ``REDIS_CLUSTER_URL`` is set, else
    ``REDIS_URL``'s (``make_client``). Stores ask for it on every use, inside
    their failure rule: a cluster that cannot be reached is a Redis failure
    there, and the next use tries again."""
    global _client
    if _client is None:
        with _client_lock:
            if _client is None:
                spec = cluster_url()
                _client = make_cluster_client(spec) if spec else make_client(settings.REDIS_URL)
    return _client


def get_layer_redis() -> redis.Redis:
    """The server at ``REDIS_URL`` (the Channels layer's and the broker's):
    ``get_redis()`` itself without a cluster."""
    global _layer_client
    if not cluster_url():
        client = get_redis()
        assert isinstance(client, redis.Redis)
        return client
    if _layer_client is None:
        with _client_lock:
            if _layer_client is None:
                _layer_client = make_client(settings.REDIS_URL)
    return _layer_client


def reset_clients() -> None:
    """Drop this process' clients (settings changed: tests); the next use
    makes new ones."""
    global _client, _layer_client
    with _client_lock:
        for client in (_client, _layer_client):
            if client is not None:
                client.close()
        _client = _layer_client = None


def text(value: str | bytes) -> str:
    """A reply as text. The shared client decodes replies (``decode_responses``),
    which redis-py's types cannot know; a client made without it gives bytes."""
    return value.decode() if isinstance(value, bytes) else value


def event_key(event_id: Any, *parts: Any) -> str:
    """``fq:{<event_id>}:part:part`` - all keys of one event in one hash slot."""
    return ":".join(["fq", f"{{{event_id}}}", *map(str, parts)])


_INCLUDE = "--! include "


@functools.cache
def _lua_source(path: Path) -> str:
    """A script's text; a line ``--! include <path>`` (relative to the
    script's folder) is replaced by that file's text, so two scripts can
    share one piece of Lua (a ``local function``) and still run as one."""
    lines = path.read_text().splitlines(keepends=True)
    return "".join(
        _lua_source((path.parent / line[len(_INCLUDE) :].strip()).resolve())
        if line.startswith(_INCLUDE)
        else line
        for line in lines
    )


class RedisStore:
    """Base for a small per-app store: loads the ``.lua`` files next to the
    subclass once, and registers them as scripts (EVALSHA, re-loaded by
    redis-py after a Redis restart, on every primary of a cluster).

    The client is looked up on use (``r``), inside the store method and so
    inside its failure rule; a store made with a ``client`` keeps that one."""

    scripts_dir: Path | None = None
    script_names: tuple[str, ...] = ()

    def __init__(self, client: Client | None = None) -> None:
        self._own_client = client
        self._scripts: dict[str, Any] = {}
        self._scripts_client: Client | None = None

    @property
    def r(self) -> Client:
        return self._own_client if self._own_client is not None else get_redis()

    @property
    def scripts(self) -> dict[str, Any]:
        client = self.r
        if self._scripts_client is not client:
            base = self.scripts_dir or Path(__file__).parent
            self._scripts = {
                name: client.register_script(_lua_source(base / f"{name}.lua"))
                for name in self.script_names
            }
            self._scripts_client = client
        return self._scripts


# --- the failure rule -------------------------------------------------------------


class RedisUnavailable(Busy):
    message = "Temporarily unavailable; retry shortly."


_LOG_EVERY_SECONDS = 60.0
_last_logged: dict[str, float] = {}
_failures = 0
_failure_listeners: list[Callable[[str], None]] = []
_operations: list[str] = []  # every store method under the rule, as it names them
_operation_listeners: list[Callable[[str], None]] = []


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


def on_redis_operation(listener: Callable[[str], None]) -> None:
    """Call ``listener(what)`` for every method under the failure rule, by
    the name its failures are counted under: those defined so far at once,
    and each one defined later as it is (metrics hook: each failure count
    starts at zero)."""
    _operation_listeners.append(listener)
    for what in _operations:
        listener(what)


def _under_the_rule(method: Callable[..., Any]) -> None:
    _operations.append(method.__qualname__)
    for listener in _operation_listeners:
        listener(method.__qualname__)


def required(method: Callable[P, T]) -> Callable[P, T]:
    """A store method the caller cannot do without: a Redis failure
    (``REDIS_FAILURES``) -> RedisUnavailable."""
    _under_the_rule(method)

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(*args, **kwargs)
        except REDIS_FAILURES as exc:
            redis_failed(method.__qualname__)
            raise RedisUnavailable() from exc
        except AttributeError as exc:
            if not _torn_connection(exc):
                raise
            redis_failed(method.__qualname__)
            raise RedisUnavailable() from exc

    setattr(wrapper, "redis_failure", "required")  # noqa: B010  (what the tests check)
    return wrapper


def best_effort(default: D) -> Callable[[Callable[P, T]], Callable[P, T | D]]:
    """A store method with a Postgres way round: a Redis failure
    (``REDIS_FAILURES``) -> ``default``."""

    def decorate(method: Callable[P, T]) -> Callable[P, T | D]:
        _under_the_rule(method)

        @functools.wraps(method)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> T | D:
            try:
                return method(*args, **kwargs)
            except REDIS_FAILURES:
                redis_failed(method.__qualname__)
                return default
            except AttributeError as exc:
                if not _torn_connection(exc):
                    raise
                redis_failed(method.__qualname__)
                return default

        setattr(wrapper, "redis_failure", "best_effort")  # noqa: B010  (what the tests check)
        return wrapper

    return decorate
