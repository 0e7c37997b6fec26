"""The entry points work before the services do: ``manage.py`` help without a
database or Redis, a real command that says what is missing; and the API docs
load nothing from elsewhere."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "argv", [[], ["--help"], ["help", "migrate"], ["migrate", "--help"], ["rebuild_redis", "-h"]]
)
def test_management_help_works_without_database_or_redis(argv):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    result = subprocess.run(  # noqa: S603 - our own manage.py
        [sys.executable, str(REPO / "manage.py"), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout or "Available subcommands" in result.stdout


@pytest.mark.parametrize(
    ("argv", "debug"),
    [(["help"], None), (["migrate", "--help"], "false"), (["bootstrap_demo", "-h"], None)],
)
def test_management_help_works_in_production_mode_without_secrets(argv, debug):
    """No secret, no service, production mode (DJANGO_DEBUG off or unset):
    help still prints, the project's own commands included."""
    env = {"PATH": os.environ["PATH"], **({"DJANGO_DEBUG": debug} if debug else {})}
    result = subprocess.run(  # noqa: S603 - our own manage.py
        [sys.executable, str(REPO / "manage.py"), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout or "Available subcommands" in result.stdout
    if argv[0] == "help":
        assert "bootstrap_demo" in result.stdout  # the project's commands, not Django's only


def test_without_services_a_real_command_still_says_what_is_missing():
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    result = subprocess.run(  # noqa: S603 - our own manage.py
        [sys.executable, str(REPO / "manage.py"), "migrate"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "DATABASE_URL is not set" in result.stderr


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/docs/", "/api/redoc/"])
def test_the_api_docs_load_only_our_own_static_files(client, path):
    response = client.get(path)

    assert response.status_code == 200
    html = response.content.decode()
    urls = re.findall(r'(?:src|href)="([^"]+)"', html)
    static = [url for url in urls if url.startswith("/static/drf_spectacular_sidecar/")]
    assert static, html
    # Swagger UI's start-up script comes from the page's own URL (the CSP allows
    # no inline script); everything else is a static file we ship.
    assert [url for url in urls if url not in static] == (
        ["/api/docs/?script="] if path == "/api/docs/" else []
    )
    for url in static:
        assert finders.find(url.removeprefix("/static/")), url
