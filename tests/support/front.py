"""The web server's front of the public documents (queueing/wsgi.py) around
a stand-in for Django that records what reached it."""

from __future__ import annotations

import io

from queueing.wsgi import LineStateFirst


def environ(path: str, method: str = "GET") -> dict:
    return {"REQUEST_METHOD": method, "PATH_INFO": path, "wsgi.input": io.BytesIO()}


class Front:
    def __init__(self) -> None:
        self.passed_on: list[str] = []  # the paths that went on to Django
        self.answered: dict = {}  # the last answer's status and headers
        self.app = LineStateFirst(self._django)

    def _django(self, environ: dict, start_response) -> list[bytes]:
        self.passed_on.append(environ["PATH_INFO"])
        start_response("404 Not Found", [])
        return [b""]

    def _start_response(self, status: str, headers: list) -> None:
        self.answered.update(status=status, headers=dict(headers))

    def get(self, path: str, method: str = "GET") -> bytes:
        return b"".join(self.app(environ(path, method), self._start_response))
