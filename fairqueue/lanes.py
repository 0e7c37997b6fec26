"""Request lanes: a web worker runs purchases first, and shares the rest
between the waiting room and new arrivals.

In a flash sale the web tier is flooded by arrivals (joins, sign-ins, page
loads: 50,000 in the first minute) while the few thousand admitted customers
claim and pay. Served first come, first served, a claim waited behind every
join and poll sent before it: in the 50,000-customer sale on two cores a claim
took 2.3 s at the median (p99 5.2 s) and a buyer saw their ticket 6.9 s after
paying; in lanes, 185 ms (p99 1.3 s) and 2.3 s (docs/BENCHMARKS.md, "Flash sale").

Every request a worker accepts gets a thread (granian's blocking threads,
one per open connection: fairqueue/webserver.py), but only WEB_THREADS of
them run the app at once. The others wait here, in three lanes, each first
come, first served. A freed slot goes to the purchase lane first; otherwise
the waiting-room and arrival lanes take turns, so neither can shut the other
out (strict priority for the waiting room left joins unanswered for minutes
in a 50,000-customer sale while 13,000 customers polled):

1. ``purchase``: claims, payments, gateway webhooks, seat maps, tickets and
   check-in, health, metrics and the staff admin. Bounded by admissions (a
   customer claims only inside their window), so it cannot starve the rest
   for long, and ops can see and act while the line floods.
2. ``waiting``: a queued customer's position read, socket ticket, leaving;
   a signed-in customer's own account (me, sign out). Bounded by
   ``poll_after_seconds``; it is how pollers learn of their admission.
3. ``arrival``: joins and everything else (sign-in, pages, static files).
   A place in line is taken when the join runs, and joins run in the order
   they came within the lane.

Written here rather than taken from a library: granian has no request
priorities, and a Django middleware runs too late (inside the app, after a
thread and a database connection were taken). The lane is chosen from the
method and path alone, before Django runs (tests/fairqueue/test_lanes.py checks every
route). Django's database connections come from a pool of WEB_THREADS per
worker (config/wsgi.py), since any of the waiting threads may run next.
"""

from __future__ import annotations

import io
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import Histogram

PURCHASE, WAITING, ARRIVAL = "purchase", "waiting", "arrival"
LANES = (PURCHASE, WAITING, ARRIVAL)

_UUID = r"[0-9a-fA-F-]{36}"
_PURCHASE_PATHS = re.compile(
    r"^/(?:"
    r"api/v1/(?:claims/|payments/|webhooks/|me/tickets/"
    rf"|events/{_UUID}/(?:claims/|tiers/|tickets/))"
    r"|payments/|tickets/|events/" + _UUID + r"/check-in/"
    r"|healthz$|readyz$|metrics$|admin/"
    r")"
)
_QUEUE = re.compile(rf"^/api/v1/events/{_UUID}/(?:queue/(.*)|me/)$")
# The account's own reads (who am I, the held-tickets bar every page shows).
_ACCOUNT = re.compile(r"^/api/v1/(?:auth/(?:me|logout)|me/holds)/$")

WAIT_SECONDS = Histogram(
    "fairqueue_web_lane_wait_seconds",
    "Time a request waited in its worker for a free slot, by lane (purchase first, "
    "the waiting room and arrivals in turns: fairqueue/lanes.py).",
    ["lane"],
    buckets=(0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
for _lane in LANES:  # on the first scrape, each at zero (fairqueue/metrics.py says why)
    WAIT_SECONDS.labels(_lane)


def lane(method: str, path: str) -> str:
    """The lane of a request, from its method and path (PATH_INFO)."""
    if _PURCHASE_PATHS.match(path):
        return PURCHASE
    queue = _QUEUE.match(path)
    if queue is not None:
        joining = queue.group(1) == "" and method == "POST"
        return ARRIVAL if joining else WAITING
    return WAITING if _ACCOUNT.match(path) else ARRIVAL


class Lanes:
    """``slots`` permits: a released one passes straight to the oldest
    request of the purchase lane, else of the waiting-room or arrival lane,
    taking turns; a late request never overtakes one already waiting in its
    lane."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("a worker needs at least one slot")
        self._mutex = threading.Lock()
        self._free = slots
        self._waiting: dict[str, deque[threading.Lock]] = {name: deque() for name in LANES}
        self._turns = (WAITING, ARRIVAL)  # whose turn is next, when both wait

    def acquire(self, lane_name: str) -> None:
        with self._mutex:
            if self._free:
                self._free -= 1
                return
            baton = threading.Lock()
            baton.acquire()
            self._waiting[lane_name].append(baton)
        baton.acquire()  # released by the request that hands its slot over

    def release(self) -> None:
        with self._mutex:
            for name in (PURCHASE, *self._turns):
                waiting = self._waiting[name]
                if waiting:
                    if name != PURCHASE:
                        self._turns = (ARRIVAL, WAITING) if name == WAITING else (WAITING, ARRIVAL)
                    waiting.popleft().release()
                    return
            self._free += 1

    def waiting(self) -> dict[str, int]:
        with self._mutex:
            return {name: len(queue) for name, queue in self._waiting.items()}


class _Released:
    """The app's response, giving the slot back once the server closed it
    (after the body was sent: Django returns its database connection then)."""

    def __init__(self, body: Iterable[bytes], release: Callable[[], None]) -> None:
        self._body = body
        self._release = release

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._body)

    def close(self) -> None:
        try:
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
        finally:
            release, self._release = self._release, _nothing
            release()


def _nothing() -> None:
    return None


# Django's default FILE_UPLOAD_MAX_MEMORY_SIZE; config/wsgi.py passes what the settings say.
READ_AHEAD_BYTES = 2_621_440


def _buffer_body(environ: dict[str, Any], limit: int) -> None:
    """Read the request body now, outside any slot. granian hands a request to
    the app once its headers are in, and the body arrives as the client sends
    it: in a slot, ten clients dribbling their POSTs froze a two-worker server
    (tests/system/test_web_server.py). Here a slow sender holds only its own thread.
    Up to ``limit`` bytes, the most Django holds in memory for a request (an
    upload under it stays in memory there too): every JSON body and the
    admin's seat-map CSV. A bigger body is read by Django in its slot; a
    proxy in front caps and buffers them (compose's nginx: 1 MB)."""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return  # Django answers a malformed length
    if not 0 < length <= limit:
        return
    stream, chunks, left = environ["wsgi.input"], [], length
    while left > 0:
        chunk = stream.read(left)
        if not chunk:
            break  # the client gave up; Django sees the short body
        chunks.append(chunk)
        left -= len(chunk)
    environ["wsgi.input"] = io.BytesIO(b"".join(chunks))


class LanedApp:
    """A WSGI app run at most ``slots`` requests at a time, in lane order,
    each with its body already read."""

    def __init__(
        self,
        app: Callable[..., Iterable[bytes]],
        slots: int,
        read_ahead: int = READ_AHEAD_BYTES,
    ) -> None:
        self.app = app
        self.lanes = Lanes(slots)
        self.read_ahead = read_ahead

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        _buffer_body(environ, self.read_ahead)
        name = lane(environ.get("REQUEST_METHOD", "GET"), environ.get("PATH_INFO", "/"))
        started = time.monotonic()
        self.lanes.acquire(name)
        WAIT_SECONDS.labels(name).observe(time.monotonic() - started)
        try:
            body = self.app(environ, start_response)
        except BaseException:
            self.lanes.release()
            raise
        return _Released(body, self.lanes.release)
