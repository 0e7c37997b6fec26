"""A TCP proxy in front of a real Redis server that can lose a reply.

``lose_reply_to(marker)``: the next request whose bytes contain ``marker``
(a script's SHA, a command name) reaches Redis and runs there, but nothing
Redis sends back on that connection reaches the client any more, as when a
reply is lost to a network fault or a timeout. The client times out,
closes the connection, and redis-py's retry sends the same command again on
a new connection, which the proxy passes through."""

from __future__ import annotations

import contextlib
import socket
import threading
from threading import Event
from urllib.parse import urlsplit


class RedisProxy:
    def __init__(self, upstream_url: str) -> None:
        parts = urlsplit(upstream_url)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 6379)
        self.db = parts.path.lstrip("/") or "0"
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._armed: bytes | None = None
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.lost = 0  # replies lost so far
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/{self.db}"

    def lose_reply_to(self, marker: bytes) -> None:
        with self._lock:
            self._armed = marker

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            with self._lock:
                self._sockets += [client, server]
            muted = Event()
            for pump in (self._requests, self._replies):
                threading.Thread(target=pump, args=(client, server, muted), daemon=True).start()

    def _requests(self, client: socket.socket, server: socket.socket, muted: Event) -> None:
        while data := _recv(client):
            with self._lock:
                if self._armed is not None and self._armed in data:
                    self._armed = None
                    self.lost += 1
                    muted.set()  # before Redis can answer
            try:
                server.sendall(data)
            except OSError:
                break
        _close(server)

    def _replies(self, client: socket.socket, server: socket.socket, muted: Event) -> None:
        while data := _recv(server):
            if muted.is_set():
                continue
            try:
                client.sendall(data)
            except OSError:
                break
        _close(client)


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except OSError:
        return b""


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
