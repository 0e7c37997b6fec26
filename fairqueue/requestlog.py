"""One log line and one latency observation per HTTP request, whatever the
HTTP server (granian or daphne both run this middleware).

The line names the method, the route (the URL pattern, so that every
``/api/v1/events/<id>/queue/`` is one route), the status, the duration and
the request id. The request id is the caller's ``X-Request-ID`` when it looks
like one (a proxy in front may set it), else a new one; it is sent back in
``X-Request-ID`` and carried by every line logged while the request runs.
Probes and scrapes (healthz, readyz, metrics) log at DEBUG: a probe every
few seconds is not news.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse

from fairqueue.logs import bind_event, log_context
from fairqueue.metrics import HTTP_REQUEST_DURATION

logger = logging.getLogger("fairqueue.http")

REQUEST_ID_HEADER = "X-Request-ID"
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{8,64}")
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
QUIET_ROUTES = frozenset({"healthz", "readyz", "metrics"})
UNMATCHED = "<unmatched>"


def route_of(request: HttpRequest) -> str:
    match = getattr(request, "resolver_match", None)
    return match.route if match is not None and match.route else UNMATCHED


class RequestLogMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get(REQUEST_ID_HEADER, "")
        request_id = incoming if _REQUEST_ID.fullmatch(incoming) else uuid.uuid4().hex
        started = time.perf_counter()
        with log_context(request_id=request_id, event_id=""):
            response = self.get_response(request)
            duration = time.perf_counter() - started
            route = route_of(request)
            method = request.method if request.method in _METHODS else "OTHER"
            HTTP_REQUEST_DURATION.labels(method, route, str(response.status_code)).observe(
                duration
            )
            logger.log(
                logging.DEBUG if route in QUIET_ROUTES else logging.INFO,
                "%s %s %s %.1fms",
                method,
                route,
                response.status_code,
                duration * 1000,
                extra={
                    "http_method": method,
                    "route": route,
                    "status": response.status_code,
                    "duration_ms": round(duration * 1000, 2),
                },
            )
        response[REQUEST_ID_HEADER] = request_id
        return response

    def process_view(
        self, request: HttpRequest, view: Any, args: tuple, kwargs: dict[str, Any]
    ) -> None:
        if kwargs.get("event_id"):
            bind_event(kwargs["event_id"])
