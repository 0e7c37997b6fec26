"""The public line state answered in front of Django (config/wsgi.py).

``GET /api/v1/events/<id>/queue/state/`` is the most frequent request of a
waiting room and the same bytes for everyone: nothing Django's middleware
does applies to it (no session, sign-in, CSRF or lockout), so it is answered
here, before the request lanes, from this process's copy of the state (one
Redis read per tick, ``line_state_held``). The headers are the ones the
Django view gives (``QueueLineStateView``, which answers everything this
does not: a state Redis does not have, HEAD, other methods, a malformed id).
It does not appear in the request log.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from fairqueue.csp import site_policy
from queueing.services.line_state import MAX_AGE_SECONDS, line_state_held

_PATH = re.compile(r"^/api/v1/events/([0-9a-fA-F-]{36})/queue/state/$")

# What the Django path adds to this answer (SecurityMiddleware, the
# clickjacking middleware, the CSP's fixed part: self.csp);
# tests/queueing/test_line_state.py compares them.
HEADERS = [
    ("Content-Type", "application/json"),
    ("X-Frame-Options", "DENY"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "same-origin"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
]


CACHE_CONTROL = f"public, max-age={MAX_AGE_SECONDS}"


class LineStateFirst:
    """WSGI: the line state from memory or Redis, everything else to ``app``."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.cache_control = ("Cache-Control", CACHE_CONTROL)
        self.csp = ("Content-Security-Policy", site_policy())

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("REQUEST_METHOD") == "GET":
            match = _PATH.match(environ.get("PATH_INFO", ""))
            if match is not None:
                body = self._state(match.group(1))
                if body is not None:
                    headers = [
                        *HEADERS,
                        self.cache_control,
                        self.csp,
                        ("Content-Length", str(len(body))),
                    ]
                    start_response("200 OK", headers)
                    return [body]
        return self.app(environ, start_response)

    @staticmethod
    def _state(event_id: str) -> bytes | None:
        try:
            parsed = uuid.UUID(event_id)
        except ValueError:
            return None
        text = line_state_held(event_id=parsed)
        return text.encode() if text is not None else None
