"""Tests that start other processes (daphne, manage.py): the settings a
child needs to share this session's test database, and a health probe."""

from __future__ import annotations

import os
import urllib.request
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection


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
