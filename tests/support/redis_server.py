"""A Redis server of the test's own, which the test may stop and start again.

The same binary and options as the embedded Redis of ``make run`` and ``make
test`` (``devtools.devstack``), on a free port. ``app_redis`` points the
application's Redis client (and the stores and locks built on it) at it, so
a test can take Redis away from a running system for real: a refused
connection, not a mock."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis

from devtools import devstack
from devtools.devstack.processes import spawn
from fairqueue import redis as app_redis_module
from inventory import store as inventory_store_module
from inventory.seating import seatmap as seatmap_module
from queueing import store as queue_store_module


class RedisServer:
    def __init__(self, directory: Path) -> None:
        self.server = devstack.Redis(directory / "redis", directory / "redis.log")
        self.server.prepare()
        self.port = devstack.free_port()
        self.proc = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start (again) on the same port, empty."""
        with self.server.log_path.open("ab") as log:
            self.proc = spawn(self.server.argv(self.port), env={}, stdout=log)
        self.server.port = self.port
        with redis.Redis(port=self.port, socket_connect_timeout=0.2) as client:
            for _ in range(200):
                try:
                    if client.ping():
                        return
                except redis.ConnectionError:
                    pass
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start on {self.port}")

    def stop(self) -> None:
        """SIGKILL: Redis goes away as in a crash, keeping nothing."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None


@contextmanager
def app_redis(server: RedisServer, monkeypatch: Any, settings: Any) -> Iterator[RedisServer]:
    """The application's Redis client, stores and locks use ``server`` for the
    duration (the channel layer keeps the suite's Redis)."""
    settings.REDIS_URL = server.url
    monkeypatch.setattr(app_redis_module, "_client", None)
    monkeypatch.setattr(queue_store_module, "_store", None)
    monkeypatch.setattr(inventory_store_module, "_store", None)
    monkeypatch.setattr(seatmap_module, "_store", None)
    try:
        yield server
    finally:
        if app_redis_module._client is not None:
            app_redis_module._client.close()
