"""Tests that start other processes (the web server, daphne, manage.py): the
settings a child needs to share this session's test database, a health probe,
and the web process as `make run` starts it."""

from __future__ import annotations

import os
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.db import connection

from devtools import devstack


def child_env(**extra: str) -> dict[str, str]:
    """This session's settings for a child process: the test database (not
    the one DATABASE_URL names), the same Redis and the same signing keys."""
    db = urlsplit(os.environ["DATABASE_URL"])._replace(path="/" + connection.settings_dict["NAME"])
    return {
        **os.environ,
        "DATABASE_URL": db.geturl(),
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,
        "TOKEN_SIGNING_KEY": settings.TOKEN_SIGNING_KEY,
        "LOG_LEVEL": "WARNING",
        **extra,
    }


def healthz_ok(base_url: str) -> bool:
    """``GET /healthz`` answers 200 (the server is up, Postgres and Redis too)."""
    try:
        with urllib.request.urlopen(f"{base_url}/healthz", timeout=2) as resp:  # noqa: S310
            return resp.status == 200
    except OSError:
        return False


@contextmanager
def web_process(**overrides: str) -> Iterator[str]:
    """The `web` entry of `make run`'s processes, on a free port."""
    port = devstack.free_port()
    env = child_env(
        PORT=str(port),
        WS_PORT=str(devstack.free_port()),
        SANDBOX_PORT=str(devstack.free_port()),
        **{"WEB_CONCURRENCY": "2", **overrides},
    )
    [entry] = [e for e in devstack.app_processes(env) if e.name == "web"]
    base = f"http://127.0.0.1:{port}"
    log = Path(tempfile.mkdtemp(prefix="fq-web-")) / "web.log"
    with log.open("wb") as out:
        proc = devstack.spawn(entry.argv, env=env, stdout=out)
    try:
        deadline = time.monotonic() + 60
        while not healthz_ok(base):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"web did not come up:\n{devstack.log_tail(log)}")
            time.sleep(0.2)
        yield base
    finally:
        devstack.stop_groups([proc])
