"""Prepared statements for the few statements every request of a sale runs
(the claim, the join, the sign-out state).

Django's psycopg cursors bind parameters on the client, so Postgres parses
and plans each statement anew: for the claim's one-statement CTE that was
half of Postgres's CPU per claim (2.1 ms against 1.1 ms prepared, measured
per backend process over 1,500 claims). These statements run on a cursor with
server-side binding that psycopg prepares on each connection's first use and
keeps (its per-connection cache, least recently used out). They still go
through Django's cursor wrapper: errors come out as ``django.db`` errors and
execute wrappers see them.

Off (plain Django cursors) when ``DB_PREPARED_STATEMENTS`` is false, the
default behind a transaction pooler (``DB_TRANSACTION_POOLER``): a pooler
that hands the server to another client loses the statements, unless it
tracks them (PgBouncer 1.21+ with ``max_prepared_statements``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

# psycopg prepares nothing while a connection's threshold is None (Django's
# setting; its own cursors bind on the client and never prepare anyway). Ours
# asks per statement; nothing else on the connection binds on the server.
_ONLY_WHEN_ASKED = 2**31


class _PreparingCursor(psycopg.Cursor):
    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        kwargs["prepare"] = True
        return super().execute(query, params, **kwargs)


@contextmanager
def prepared_cursor() -> Iterator[Any]:
    """Like ``connection.cursor()``; its statements are prepared (above).
    Only for SQL whose parameters have types Postgres can tell (a ``None``
    where it cannot needs a cast in the SQL)."""
    # The connection looked up once: each access through Django's
    # ``connection`` proxy looks this thread's connection up anew.
    db = connections[DEFAULT_DB_ALIAS]
    # While queries are logged (DEBUG, a test counting them) the plain cursor:
    # Django's log reads the SQL back from a client-side cursor.
    if not settings.DB_PREPARED_STATEMENTS or db.queries_logged:
        with db.cursor() as cursor:
            yield cursor
        return
    db.ensure_connection()
    db.validate_thread_sharing()
    if db.connection.prepare_threshold is None:
        db.connection.prepare_threshold = _ONLY_WHEN_ASKED
    raw = _PreparingCursor(db.connection)
    with db.make_cursor(raw) as cursor:  # type: ignore[arg-type]  # stubs: it takes the raw cursor
        yield cursor


def violated_constraint(exc: Exception) -> str:
    """The name of the constraint an IntegrityError broke ("" when Postgres
    named none)."""
    return getattr(getattr(exc.__cause__, "diag", None), "constraint_name", "") or ""
