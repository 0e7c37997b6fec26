"""Settings for pytest (pyproject.toml): the real settings in development
mode, so that `.venv/bin/pytest` against any DATABASE_URL / REDIS_URL needs
no other variable. Set in the process environment, not only here, so the
processes tests start (daphne, granian) run in the same mode; a test that
needs production mode sets DJANGO_DEBUG=false for its own subprocess."""

import os

os.environ.setdefault("DJANGO_DEBUG", "true")

from config.settings import *  # noqa: F403
