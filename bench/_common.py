"""What the benchmark clients share: a latency recorder, an HTTP caller that
retries the way a polite client does, and small helpers.

Client side only: nothing here imports Django or the project's internals; the
benchmark talks to the stack over HTTP, WebSocket and (for the invariant
check) straight to Postgres and Redis.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import aiohttp

# Retry-After answers (429/503; 409 while an Idempotency-Key is in progress) are
# honoured up to this many times per call;
# connection errors (a web process killed mid-request) up to CONNECT_RETRIES.
BUSY_RETRIES = 8
CONNECT_RETRIES = 6
IN_PROGRESS_RETRIES = 90


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list (q in 0..100)."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def jwt_claims(token: str) -> dict[str, Any]:
    """The payload of a JWT, unverified (the client only reads its own token)."""
    try:
        payload = token.split(".")[1]
        payload += "=" * (-len(payload) % 4)
        return json.loads(base64.urlsafe_b64decode(payload))
    except (IndexError, ValueError):
        return {}


async def ws_ticket(
    session: aiohttp.ClientSession, ws_queue_url: str, token: str, http_base: str = ""
) -> str:
    """A single-use ticket for the queue socket at ``ws_queue_url``
    (``ws://host:port/ws/events/<id>/queue/``), asked of ``http_base`` (the
    web servers) or else of the socket's own host (daphne serves HTTP too):
    the socket no longer takes the customer token itself."""
    path = ws_queue_url.split("?")[0].split("/ws/events/", 1)[1]
    base = http_base.rstrip("/") or "http" + ws_queue_url.split("/ws/events/")[0][2:]
    url = f"{base}/api/v1/events/{path.rstrip('/')}/ws-ticket/"
    async with session.post(url, headers={"Authorization": f"Bearer {token}"}) as answer:
        body = await answer.json(content_type=None)
        if answer.status != 201:
            raise aiohttp.ClientResponseError(
                answer.request_info, (), status=answer.status, message=str(error_code(body))
            )
        return body["ticket"]


def error_code(body: Any) -> str | None:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"].get("code")
    return None


@dataclass
class Sample:
    t: float  # seconds since the recorder's start when the request was sent
    latency: float  # seconds
    status: int  # HTTP status; 0 = connection error / timeout


@dataclass
class Recorder:
    """Every request's latency and outcome, by endpoint; errors by code."""

    t0: float = field(default_factory=time.monotonic)
    samples: dict[str, list[Sample]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter = field(default_factory=Counter)  # (endpoint, status, code) -> n
    counters: Counter = field(default_factory=Counter)  # free-form outcome counters

    def now(self) -> float:
        return time.monotonic() - self.t0

    def add(self, endpoint: str, started: float, latency: float, status: int, code: str | None):
        self.samples[endpoint].append(Sample(started, latency, status))
        if status == 0 or status >= 400:
            self.errors[(endpoint, status, code or ("connection" if status == 0 else "-"))] += 1

    def total_requests(self) -> int:
        return sum(len(v) for v in self.samples.values())

    def summary(self, since: float = 0.0, until: float | None = None) -> dict[str, dict]:
        """Per endpoint: count, ok count, throughput over its own active span,
        and p50/p95/p99/max latency in ms."""
        out = {}
        for endpoint, samples in sorted(self.samples.items()):
            chosen = [s for s in samples if s.t >= since and (until is None or s.t <= until)]
            if not chosen:
                continue
            lat = sorted(s.latency * 1000 for s in chosen)
            first = min(s.t for s in chosen)
            last = max(s.t + s.latency for s in chosen)
            span = max(last - first, 1e-6)
            out[endpoint] = {
                "count": len(chosen),
                "ok": sum(1 for s in chosen if 0 < s.status < 400),
                "per_second": len(chosen) / span,
                "span_s": span,
                "p50_ms": percentile(lat, 50),
                "p95_ms": percentile(lat, 95),
                "p99_ms": percentile(lat, 99),
                "max_ms": lat[-1],
            }
        return out


class Api:
    """HTTP calls with a bounded number in flight, timed, with the retries a
    well-behaved client makes: Retry-After on 409/429/503, backoff with jitter on
    connection errors. Every attempt is recorded."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        recorder: Recorder,
        *,
        concurrency: int,
        timeout: float = 30.0,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.session = session
        self.base = base_url.rstrip("/")
        self.headers = dict(headers or {})  # sent with every call (e.g. the sandbox's token)
        self.rec = recorder
        self.sem = asyncio.Semaphore(concurrency)
        self.timeout = aiohttp.ClientTimeout(total=timeout)

    async def once(
        self,
        endpoint: str,
        method: str,
        url: str,
        *,
        token: str | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any, dict[str, str]]:
        hdrs = {**self.headers, **(headers or {})}
        if token:
            hdrs["Authorization"] = f"Bearer {token}"
        full = url if url.startswith("http") else f"{self.base}{url}"
        async with self.sem:
            started = self.rec.now()
            t = time.monotonic()
            try:
                async with self.session.request(
                    method, full, json=body, headers=hdrs, timeout=self.timeout
                ) as resp:
                    raw = await resp.read()
                    status = resp.status
                    resp_headers = dict(resp.headers)
            except (TimeoutError, aiohttp.ClientError, OSError):
                self.rec.add(endpoint, started, time.monotonic() - t, 0, None)
                return 0, None, {}
            latency = time.monotonic() - t
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw[:200].decode(errors="replace")
        self.rec.add(endpoint, started, latency, status, error_code(parsed))
        return status, parsed, resp_headers

    async def call(
        self,
        endpoint: str,
        method: str,
        url: str,
        *,
        token: str | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        retry_connection: bool = True,
    ) -> tuple[int, Any]:
        busy = connect = 0
        while True:
            status, parsed, resp_headers = await self.once(
                endpoint, method, url, token=token, body=body, headers=headers
            )
            # 409 + Retry-After: the Idempotency-Key's first request is still
            # being processed (or its process died: taken over once stale).
            budget = IN_PROGRESS_RETRIES if status == 409 else BUSY_RETRIES
            if status in (409, 429, 503) and "Retry-After" in resp_headers and busy < budget:
                busy += 1
                try:
                    wait = float(resp_headers.get("Retry-After", "1"))
                except ValueError:
                    wait = 1.0
                await asyncio.sleep(wait * (0.5 + random.random()))
                continue
            if status == 0 and retry_connection and connect < CONNECT_RETRIES:
                connect += 1
                await asyncio.sleep(min(8.0, 0.25 * 2**connect) * random.random() + 0.05)
                continue
            return status, parsed
