"""Small HTTP helpers of the sandbox's WSGI app."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

Response = tuple[str, list[tuple[str, str]], bytes]
StartResponse = Callable[[str, list[tuple[str, str]]], Any]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def json_response(status: str, body: Any, headers: Iterable[tuple[str, str]] = ()) -> Response:
    return status, [("Content-Type", "application/json"), *headers], json.dumps(body).encode()


def fail(status: str, message: str) -> Response:
    return json_response(status, {"status": False, "message": message})


def with_query(url: str, **params: str) -> str:
    parts = urlsplit(url)
    query = "&".join(q for q in (parts.query, urlencode(params)) if q)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
