"""The public documents of the waiting room answered in front of Django
(config/wsgi.py): the line state and the pre-queue draw's shards.

``GET /api/v1/events/<id>/queue/state/`` is the most frequent request of a
waiting room and the same bytes for everyone: nothing Django's middleware
does applies to it (no session, sign-in, CSRF or lockout), so it is answered
here, before the request lanes, from this process's copy of the state (one
Redis read per tick, ``line_state_held``). ``GET .../queue/draw/<shard>/``
(``queueing.services.draw``) likewise, from this process' copy of the shard
(one Redis read per shard: it never changes). The headers are the ones the
Django views give (``QueueLineStateView``, ``QueueDrawShardView``, which
answer everything this does not: a document Redis does not have, HEAD,
other methods, a malformed id or shard). They do not appear in the request
log.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from fairqueue.csp import site_policy
from queueing.services.draw import MAX_AGE_SECONDS as DRAW_MAX_AGE_SECONDS
from queueing.services.draw import draw_shard_held
from queueing.services.line_state import MAX_AGE_SECONDS, line_state_held

DRAW_SHARD = re.compile(r"[0-9a-f]{2}")
_PATH = re.compile(r"^/api/v1/events/([0-9a-fA-F-]{36})/queue/(state|draw/([0-9a-f]{2}))/$")

# What the Django path adds to these answers (SecurityMiddleware, the
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
DRAW_CACHE_CONTROL = f"public, max-age={DRAW_MAX_AGE_SECONDS}"


class LineStateFirst:
    """WSGI: the line state and the draw's shards from memory or Redis,
    everything else to ``app``."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.cache_control = ("Cache-Control", CACHE_CONTROL)
        self.draw_cache_control = ("Cache-Control", DRAW_CACHE_CONTROL)
        self.csp = ("Content-Security-Policy", site_policy())

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("REQUEST_METHOD") == "GET":
            match = _PATH.match(environ.get("PATH_INFO", ""))
            if match is not None:
                event_id, shard = match.group(1), match.group(3)
                body = self._state(event_id) if shard is None else self._shard(event_id, shard)
                if body is not None:
                    headers = [
                        *HEADERS,
                        self.cache_control if shard is None else self.draw_cache_control,
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

    @staticmethod
    def _shard(event_id: str, shard: str) -> bytes | None:
        try:
            parsed = uuid.UUID(event_id)
        except ValueError:
            return None
        return draw_shard_held(event_id=parsed, shard=shard)
