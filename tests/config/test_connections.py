"""Each entry point chooses how its process connects to Postgres before the
settings load (config/connections.py), without rewriting the environment:
the web server always takes a pool of WEB_THREADS connections, daphne a pool
unless DB_POOL says no, everything else one persistent connection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

REPORT = (
    "import json, os; from django.conf import settings; db = settings.DATABASES['default'];"
    "print(json.dumps([db.get('OPTIONS', {}).get('pool'), db['CONN_MAX_AGE'],"
    " os.environ.get('DB_POOL'), os.environ.get('DB_POOL_MAX_SIZE')]))"
)
ENTRY = {
    "wsgi": "import config.wsgi; ",
    "asgi": "import config.asgi; ",
    "other": "import django; django.setup(); ",
}
NOT_SET = ("DB_POOL", "DB_POOL_MAX_SIZE", "DB_POOL_MIN_SIZE", "WEB_THREADS", "DB_CONN_MAX_AGE")


def connections_of(entry: str, **environ: str) -> list:
    env = {k: v for k, v in os.environ.items() if k not in NOT_SET}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", DJANGO_DEBUG="true", **environ)
    result = subprocess.run(  # noqa: S603 - our own entry points
        [sys.executable, "-c", ENTRY[entry] + REPORT],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


POOL_OF = {"timeout": 10}


@pytest.mark.parametrize(
    ("entry", "environ", "pool", "max_age"),
    [
        ("wsgi", {"WEB_THREADS": "3"}, {"min_size": 3, "max_size": 3, **POOL_OF}, 0),
        ("wsgi", {"WEB_THREADS": "3", "DB_POOL": "false"}, {"min_size": 3, "max_size": 3, **POOL_OF}, 0),  # noqa: E501
        ("wsgi", {"WEB_THREADS": "3", "DB_POOL_MAX_SIZE": "2"}, {"min_size": 2, "max_size": 2, **POOL_OF}, 0),  # noqa: E501
        ("asgi", {}, {"min_size": 1, "max_size": 10, **POOL_OF}, 0),
        ("asgi", {"DB_POOL": "false"}, None, 60),
        ("other", {}, None, 60),
        ("other", {"DB_POOL": "true", "DB_POOL_MAX_SIZE": "5"}, {"min_size": 1, "max_size": 5, **POOL_OF}, 0),  # noqa: E501
    ],
)
def test_each_entry_point_gets_the_connections_it_needs(entry, environ, pool, max_age):
    got_pool, got_max_age, db_pool, max_size = connections_of(entry, **environ)
    assert (got_pool, got_max_age) == (pool, max_age)
    # The environment is what the process was given: nothing rewrote it.
    assert (db_pool, max_size) == (environ.get("DB_POOL"), environ.get("DB_POOL_MAX_SIZE"))
