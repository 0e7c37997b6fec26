"""Round trips to Postgres and Redis counted at the client, for the
in-process cost benchmarks (claim_cost.py, request_cost.py).

One per statement sent to Postgres plus two per transaction (BEGIN and
COMMIT or ROLLBACK are sent by psycopg, not through ``execute()``); one per
packet written to Redis (a pipeline or a script is one). Counts do not
depend on how busy the machine is.
"""

from __future__ import annotations

from typing import Any


class RoundTrips:
    """``with RoundTrips() as counted:`` patches the clients while open;
    ``counted.postgres`` / ``counted.redis`` hold the counts so far."""

    def __init__(self) -> None:
        self.postgres = 0
        self.redis = 0
        self._undo: list[Any] = []

    def reset(self) -> None:
        self.postgres = self.redis = 0

    def __enter__(self) -> RoundTrips:
        import redis.connection
        from django.db import connection, connections

        wrapper = type(connections["default"])
        commit, rollback = wrapper.commit, wrapper.rollback
        send = redis.connection.AbstractConnection.send_packed_command
        counter = self

        def counted_commit(self: Any) -> None:
            counter.postgres += 2
            commit(self)

        def counted_rollback(self: Any) -> None:
            counter.postgres += 2
            rollback(self)

        def counted_send(self: Any, command: Any, check_health: bool = True) -> None:
            counter.redis += 1
            send(self, command, check_health)

        def count_pg(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            counter.postgres += 1
            return execute(sql, params, many, context)

        wrapper.commit, wrapper.rollback = counted_commit, counted_rollback
        redis.connection.AbstractConnection.send_packed_command = counted_send
        statements = connection.execute_wrapper(count_pg)
        statements.__enter__()

        def undo() -> None:
            statements.__exit__(None, None, None)
            wrapper.commit, wrapper.rollback = commit, rollback
            redis.connection.AbstractConnection.send_packed_command = send

        self._undo.append(undo)
        return self

    def __exit__(self, *exc: object) -> None:
        self._undo.pop()()
