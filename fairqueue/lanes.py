"""Request lanes: a web worker shares its slots between purchases, the
waiting room and everyone else, in turns, and each app says which of its
routes go where.

In a flash sale the web tier is flooded by arrivals (joins, sign-ins, page
loads: 50,000 in the first minute) while the few thousand admitted customers
claim and pay. Served first come, first served, a claim waits behind every
join and poll sent before it; in lanes, it waits behind the purchases before
it and a share of the rest (docs/BENCHMARKS.md, "Flash sale").

Every request a worker accepts gets a thread (granian's blocking threads,
one per open connection: fairqueue/webserver.py), but only WEB_THREADS of
them run the app at once. The others wait here, in three lanes:

1. ``purchase``: a signed-in customer's claim or payment, and a gateway
   webhook whose signature checks.
2. ``waiting``: a signed-in customer's position read, socket ticket and
   leaving, their own account and tickets.
3. ``arrival``: joins, sign-in, pages, and everything a route does not
   declare or a request cannot prove (no token, a bad signature, an
   unknown path, the admin, health and metrics).

A freed slot goes to the next lane in ``TURNS`` that has a request waiting:
purchases get every other slot while the other lanes wait, the waiting room
and arrivals a quarter each, and a lane with nothing waiting gives its turn
on. No lane can shut another out: a flood of any one kind of request (a loop
of 404s, of position reads, of a claim with a stolen token) slows its own
lane only and takes at most its turns from the others. Within a lane the
routes take turns as well, so a flood of one path (a 404 in a loop) leaves
sign-in and joins, in the same lane, their turns. A route's own requests
keep their order: joins run in the order they came (a place in line is
taken when the join runs).

A route declares its lane where its app lists it (``declare`` in the app's
urls.py), with the proof a request must carry to ride above the arrival
lane: a customer token whose signature checks (customers.authentication),
a webhook signature (payments.views). A proof is checked here, before the
request takes a slot, from its headers and its body already read (no
database, no Redis); the view checks everything again (a customer token
verified here is not verified twice: customers.authentication). The route
is found with Django's own resolver (tests/fairqueue/test_lanes.py checks
every route), once (and remembered per path, ``_resolved``): ``RoutedHandler``
hands Django the match found here.
Written here rather than taken from a library: granian has no request
priorities, and a Django middleware runs too late (inside the app,
after a thread and a database connection were taken). Django's database
connections come from a pool of WEB_THREADS per worker (config/wsgi.py),
since any of the waiting threads may run next.
"""

from __future__ import annotations

import functools
import io
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from django.core.handlers.wsgi import WSGIHandler, get_path_info
from django.http import HttpRequest
from django.urls import Resolver404, ResolverMatch, URLResolver, get_resolver, get_urlconf
from prometheus_client import Histogram

PURCHASE, WAITING, ARRIVAL = "purchase", "waiting", "arrival"
LANES = (PURCHASE, WAITING, ARRIVAL)
# Whose turn a freed slot is, in this order, skipping a lane with nobody waiting.
TURNS = (PURCHASE, WAITING, PURCHASE, ARRIVAL)

Proof = Callable[[dict[str, Any]], bool]
View = TypeVar("View", bound=Callable[..., Any])
_ATTRIBUTE = "fairqueue_lane"


@dataclass(frozen=True)
class Declared:
    """A route's lane by request method (``*``: any other), and the proof a
    request must carry to ride in it."""

    by_method: Mapping[str, str]
    proof: Proof | None

    def lane(self, environ: dict[str, Any]) -> str:
        method = str(environ.get("REQUEST_METHOD", "GET")).upper()
        name = self.by_method.get(method, self.by_method.get("*", ARRIVAL))
        if name == ARRIVAL or self.proof is None:
            return ARRIVAL
        try:
            return name if self.proof(environ) else ARRIVAL
        except Exception:
            return ARRIVAL


def declare(view: View, lanes: str | Mapping[str, str], *, proof: Proof | None = None) -> View:
    """Put a URL pattern's view in a lane (or one per method, ``*`` for the
    rest): ``path("claims/", declare(View.as_view(), PURCHASE, proof=...))``.
    Only a request that carries ``proof`` rides above the arrival lane."""
    by_method = {"*": lanes} if isinstance(lanes, str) else dict(lanes)
    if not set(by_method.values()) <= set(LANES):
        raise ValueError(f"unknown lane in {by_method}")
    if proof is None and set(by_method.values()) != {ARRIVAL}:
        raise ValueError("a lane above arrival needs a proof of who sent the request")
    setattr(view, _ATTRIBUTE, Declared(by_method, proof))
    return view


UNROUTED = ""  # the route of every path no URL pattern matches
# Where ``place`` keeps the match it found, for ``RoutedHandler`` (a WSGI
# environ key no header can set).
_RESOLVED = "fairqueue.resolver_match"


def place(environ: dict[str, Any]) -> tuple[str, str]:
    """The lane of a request (its route's, if the request proves it belongs
    there; arrival otherwise) and its route (the URL pattern it matches)."""
    path = get_path_info(environ)
    try:
        match = _resolved(get_resolver(get_urlconf()), path)
    except Resolver404:
        return ARRIVAL, UNROUTED
    environ[_RESOLVED] = (path, match)
    declared = getattr(match.func, _ATTRIBUTE, None)
    name = declared.lane(environ) if isinstance(declared, Declared) else ARRIVAL
    return name, match.route


@functools.lru_cache(maxsize=1024)
def _resolved(resolver: URLResolver, path: str) -> ResolverMatch:
    """``resolve(path)``, remembered: a sale's hot paths are few and each is
    asked for by everyone (one position path per event for all who wait),
    and walking the nested URLconfs to an app's route costs tens of
    microseconds of CPU each time. A new URLconf is a new resolver (Django's
    ``clear_url_caches``), so a new key; a path no pattern matches raises
    and is not remembered; paths made up to churn it cost what resolving
    costs anyway. A match is shared by the requests of its path: Django and
    our middleware only read it (the view gets a copy of its arguments)."""
    return resolver.resolve(path)


def lane(environ: dict[str, Any]) -> str:
    return place(environ)[0]


WAIT_SECONDS = Histogram(
    "fairqueue_web_lane_wait_seconds",
    "Time a request waited in its worker for a free slot, by lane (purchases, the "
    "waiting room and arrivals in turns: fairqueue/lanes.py).",
    ["lane"],
    buckets=(0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
for _lane in LANES:  # on the first scrape, each at zero (fairqueue/metrics.py says why)
    WAIT_SECONDS.labels(_lane)


class Lanes:
    """``slots`` permits: a released one passes straight to the next lane in
    ``TURNS`` with a request waiting. Within a lane the routes take turns
    too, and each route's requests keep their order: a late request never
    overtakes one of its route, and a flood of one route (a 404 in a loop,
    a sign-in script) delays another route's request by one turn, not by
    the flood's length."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("a worker needs at least one slot")
        self._mutex = threading.Lock()
        self._free = slots
        # Per lane, the routes with requests waiting, in the order of their turns.
        self._waiting: dict[str, OrderedDict[str, deque[threading.Lock]]] = {
            name: OrderedDict() for name in LANES
        }
        self._turn = 0  # index in TURNS of the lane whose turn is next

    def acquire(self, lane_name: str, route: str = UNROUTED) -> None:
        with self._mutex:
            if self._free:
                self._free -= 1
                return
            baton = threading.Lock()
            baton.acquire()
            self._waiting[lane_name].setdefault(route, deque()).append(baton)
        baton.acquire()  # released by the request that hands its slot over

    def release(self) -> None:
        with self._mutex:
            for step in range(len(TURNS)):
                turn = (self._turn + step) % len(TURNS)
                routes = self._waiting[TURNS[turn]]
                if routes:
                    self._turn = (turn + 1) % len(TURNS)
                    route, batons = routes.popitem(last=False)
                    baton = batons.popleft()
                    if batons:
                        routes[route] = batons  # its next request, after the other routes
                    baton.release()
                    return
            self._free += 1

    def waiting(self) -> dict[str, int]:
        with self._mutex:
            return {
                name: sum(len(batons) for batons in routes.values())
                for name, routes in self._waiting.items()
            }


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


class RoutedHandler(WSGIHandler):
    """Django's WSGI handler, taking the URL match ``place`` found for the
    request (the same resolver, path and URLconf) instead of resolving the
    URL a second time; any other request is resolved as Django does."""

    def resolve_request(self, request: HttpRequest) -> ResolverMatch:
        held = request.META.get(_RESOLVED)
        if held is None or held[0] != request.path_info or hasattr(request, "urlconf"):
            return super().resolve_request(request)
        request.resolver_match = held[1]
        return held[1]


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
        name, route = place(environ)
        started = time.monotonic()
        self.lanes.acquire(name, route)
        WAIT_SECONDS.labels(name).observe(time.monotonic() - started)
        try:
            body = self.app(environ, start_response)
        except BaseException:
            self.lanes.release()
            raise
        return _Released(body, self.lanes.release)
