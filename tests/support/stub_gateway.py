"""A scripted HTTP server for client tests: each request gets the next
scripted answer (status, body, delay, headers) and is recorded."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class StubGateway:
    def __init__(self) -> None:
        self.script: list[tuple[int, Any, float, dict[str, str]]] = []
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with stub.lock:
                    stub.requests.append(
                        {
                            "method": self.command,
                            "path": self.path,
                            "headers": dict(self.headers),
                            "body": json.loads(body) if body else None,
                        }
                    )
                    status, payload, delay, headers = (
                        stub.script.pop(0) if stub.script else (500, {"status": False}, 0.0, {})
                    )
                if delay:
                    time.sleep(delay)
                raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def then(
        self, status: int, body: Any, delay: float = 0.0, headers: dict[str, str] | None = None
    ) -> StubGateway:
        self.script.append((status, body, delay, headers or {}))
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
