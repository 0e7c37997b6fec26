"""How a process gets its Postgres connections: chosen by its entry point
before Django reads the settings (``config/settings.py`` asks ``database_pool``).

- The WSGI server (``config/wsgi.py``, granian): always a pool, of
  ``WEB_THREADS`` connections per worker process. Any of a worker's waiting
  request threads may run next, so one persistent connection per thread would
  be hundreds.
- The ASGI server (``config/asgi.py``, daphne): a pool unless ``DB_POOL``
  says otherwise. It runs sync code in a thread pool, where persistent
  connections are never reused and exhaust Postgres.
- Anything else (Celery, ``manage.py``, the tests): ``DB_POOL``, off by
  default: one persistent connection per process.

``DB_POOL_MAX_SIZE`` and ``DB_POOL_MIN_SIZE`` size the pool; the WSGI server's
default for both is its thread count (all opened at the first request).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import environ


@dataclass(frozen=True)
class PoolChoice:
    always: bool = False  # a pool whatever DB_POOL says
    default: bool = False  # DB_POOL's default
    size: int | None = None  # the pool's default size (min and max)


_choice = PoolChoice()


def pool_for_entry_point(*, always: bool = False, size: int | None = None) -> None:
    """An entry point's choice (``config/wsgi.py``, ``config/asgi.py``), made
    before the settings are imported: a pool by default, or ``always``; of
    ``size`` connections unless the environment sizes it."""
    global _choice
    _choice = PoolChoice(always=always, default=True, size=size)


def database_pool(env: environ.Env) -> dict[str, Any] | None:
    """The psycopg pool's options for this process, or None for persistent
    connections."""
    if not (_choice.always or env.bool("DB_POOL", default=_choice.default)):
        return None
    max_size = env.int("DB_POOL_MAX_SIZE", default=_choice.size or 10)
    min_size = env.int("DB_POOL_MIN_SIZE", default=_choice.size or 1)
    return {"min_size": min(max_size, min_size), "max_size": max_size, "timeout": 10}
