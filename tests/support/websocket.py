"""A minimal WebSocket client for tests that talk to real daphne processes."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455, section 1.3


class WebSocket:
    """Just enough of an RFC 6455 client to read a server's text frames, on
    the standard library (no WebSocket client is among the dev dependencies,
    and autobahn's asyncio side cannot load once daphne's Twisted side has)."""

    def __init__(self, port: int, path: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buffer = b""
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        status, *headers = head.decode("latin-1").lower().split("\r\n")
        assert status.split()[1] == "101", head
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest())  # noqa: S324
        assert f"sec-websocket-accept: {accept.decode().lower()}" in headers, head

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buffer += chunk

    def _frame(self) -> tuple[int, bytes] | None:
        """(opcode, payload) of the first whole frame in the buffer, removed
        from it; None while incomplete. Server frames are never masked."""
        if len(self.buffer) < 2:
            return None
        opcode, length, at = self.buffer[0] & 0x0F, self.buffer[1] & 0x7F, 2
        assert not self.buffer[1] & 0x80, "a server frame must not be masked"
        if length >= 126:
            size = 2 if length == 126 else 8
            if len(self.buffer) < at + size:
                return None
            length, at = int.from_bytes(self.buffer[at : at + size], "big"), at + size
        if len(self.buffer) < at + length:
            return None
        payload, self.buffer = self.buffer[at : at + length], self.buffer[at + length :]
        return opcode, payload

    def receive(self, timeout: float = 5.0) -> dict:
        """The next text message, as JSON. Pings are ignored: daphne sends
        them only after 20 s of silence."""
        self.sock.settimeout(timeout)
        while True:
            frame = self._frame()
            if frame is None:
                self._fill()
            elif frame[0] == 0x1:
                return json.loads(frame[1])
            elif frame[0] == 0x8:
                raise ConnectionError(f"closed by the server: {frame[1][:2].hex()}")

    def receive_nothing(self, timeout: float = 0.3) -> bool:
        try:
            self.receive(timeout)
        except TimeoutError:
            return True
        return False

    def close(self) -> None:
        self.sock.close()
