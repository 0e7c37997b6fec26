"""DB_TRANSACTION_POOLER (docs/SCALING.md, PgBouncer in transaction mode):
the app's connections iterate without server-side cursors and prepare no
statement (what a transaction pooler needs); directly on Postgres, the hot
statements are prepared (fairqueue/db.py, tests/fairqueue/test_prepared_statements.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import child_env

REPO = Path(__file__).resolve().parents[2]
PROBE = """
import django, json
django.setup()
from django.conf import settings
from django.db import connection
from customers.models import Customer
list(Customer.objects.all().iterator(chunk_size=10))
connection.ensure_connection()
print(json.dumps({
    "server_side_cursors": not connection.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS"),
    "prepare_threshold": connection.connection.prepare_threshold,
    "hot_statements_prepared": settings.DB_PREPARED_STATEMENTS,
}))
"""


def probe(**env: str) -> dict:
    result = subprocess.run(  # noqa: S603  (our own interpreter and probe)
        [sys.executable, "-c", PROBE],
        env=child_env(DJANGO_SETTINGS_MODULE="config.settings", DJANGO_DEBUG="true", **env),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.django_db
def test_behind_a_transaction_pooler_no_prepared_statements_nor_server_side_cursors():
    assert probe(DB_TRANSACTION_POOLER="true") == {
        "server_side_cursors": False,
        "prepare_threshold": None,
        "hot_statements_prepared": False,
    }
    assert probe() == {
        "server_side_cursors": True,
        "prepare_threshold": None,
        "hot_statements_prepared": True,
    }
    assert probe(DB_TRANSACTION_POOLER="true", DB_PREPARED_STATEMENTS="true")[
        "hot_statements_prepared"
    ]
