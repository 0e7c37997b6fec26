"""Bulk writes of a whole waiting line (the rebuild after a Redis wipe, the
reconciliation's repairs): ZADD commands encoded by hand in the Redis
protocol and written on one connection from a second thread, replies read
at the end. redis-py's generic encoder costs several microseconds per
argument, which for a million members is most of the rebuild."""

from __future__ import annotations

import queue
import threading

import redis

from fairqueue.redis import Client


def pack_zadd(head: list[bytes], batch: list[tuple[str, int]]) -> bytes:
    """One ``ZADD key [XX] score member ...`` in the Redis protocol."""
    parts = [b"*%d\r\n" % (len(head) + 2 * len(batch))]
    parts.extend(b"$%d\r\n%b\r\n" % (len(arg), arg) for arg in head)
    for member, score in batch:
        s, m = str(score).encode(), member.encode()
        parts.append(b"$%d\r\n%b\r\n$%d\r\n%b\r\n" % (len(s), s, len(m), m))
    return b"".join(parts)


class PipelinedSender:
    """Writes packed commands on one pooled connection from a thread (socket
    writes release the GIL, so Postgres reads and encoding go on meanwhile),
    then reads every reply. An error reply or a broken connection is raised
    by ``put`` or ``finish``; the caller then calls ``abort``.

    The connection goes back to the pool exactly once, whichever of
    ``finish`` and ``abort`` ends the run (both may): a connection released
    twice would sit in the pool twice, and two callers would share it and
    read each other's replies."""

    def __init__(self, client: Client, key: str) -> None:
        # On a cluster: the pool of the node that serves ``key``'s slot.
        server = client
        if isinstance(client, redis.RedisCluster):
            node = client.get_node_from_key(key)
            if node is None or node.redis_connection is None:
                raise redis.ConnectionError(f"no cluster node serves {key}")
            server = node.redis_connection
        assert isinstance(server, redis.Redis)
        self.pool = server.connection_pool
        try:
            self.conn: redis.Connection | None = self.pool.get_connection()
        except TypeError:  # redis-py < 5.3 wants a command name
            self.conn = self.pool.get_connection("ZADD")
        self.queue: queue.Queue[bytes | None] = queue.Queue(maxsize=8)
        self.sent = 0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(self.conn,), daemon=True)
        self.thread.start()

    def _run(self, conn: redis.Connection) -> None:
        while (packed := self.queue.get()) is not None:
            if self.error is None:
                try:
                    conn.send_packed_command([packed])
                    self.sent += 1
                except BaseException as exc:
                    self.error = exc

    def put(self, packed: bytes) -> None:
        if self.error is not None:
            raise self.error
        self.queue.put(packed)

    def _stop(self) -> None:
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()

    def _give_back(self, *, broken: bool) -> None:
        """Return the connection to the pool, once; a broken one (or one with
        replies nobody read) is disconnected first, so the pool reconnects it."""
        conn, self.conn = self.conn, None
        if conn is None:
            return
        if broken:
            conn.disconnect()
        self.pool.release(conn)

    def abort(self) -> None:
        """The caller failed half-way: stop, and drop the connection (its
        unread replies must not reach the next user of the pool)."""
        self.error = self.error or RuntimeError("aborted")
        self._stop()
        self._give_back(broken=True)

    def finish(self) -> None:
        self._stop()
        broken = True
        try:
            if self.error is not None:
                raise self.error
            assert self.conn is not None, "finish after the connection went back"
            for _ in range(self.sent):
                self.conn.read_response()
            broken = False
        finally:
            self.sent = 0
            self._give_back(broken=broken)
