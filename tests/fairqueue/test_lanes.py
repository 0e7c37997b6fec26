"""Request lanes (fairqueue/lanes.py): a web worker runs purchases first and
lets the waiting room and arrivals take turns, first come first served
within a lane; every route has the lane its customers need."""

from __future__ import annotations

import http.client
import io
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from fairqueue.lanes import ARRIVAL, PURCHASE, WAITING, LanedApp, Lanes, lane
from tests.support.processes import web_process

E, T, C, P = (str(uuid.uuid4()) for _ in range(4))

# Every named route, the arguments to reverse it with, and its lane.
ROUTES: dict[str, tuple[dict, dict[str, str]]] = {
    # purchase: what an admitted customer, the gateway, the door and ops need
    "event-claim-create": ({"event_id": E}, {"POST": PURCHASE}),
    "tier-seat-map": ({"event_id": E, "tier_id": T}, {"GET": PURCHASE}),
    "claim-detail": ({"claim_id": C}, {"GET": PURCHASE, "DELETE": PURCHASE}),
    "ticket-check-in": ({"event_id": E}, {"POST": PURCHASE}),
    "claim-payments": ({"claim_id": C}, {"POST": PURCHASE}),
    "payment-detail": ({"payment_id": P}, {"GET": PURCHASE}),
    "paystack-webhook": ({}, {"POST": PURCHASE}),
    "paystack-webhook-no-slash": ({}, {"POST": PURCHASE}),
    "me-tickets": ({}, {"GET": PURCHASE}),
    "healthz": ({}, {"GET": PURCHASE}),
    "readyz": ({}, {"GET": PURCHASE}),
    "metrics": ({}, {"GET": PURCHASE}),
    "check-in-page": ({"event_id": E}, {"GET": PURCHASE}),
    "check-in-count": ({"event_id": E}, {"GET": PURCHASE}),
    "my-tickets-page": ({}, {"GET": PURCHASE}),
    "ticket-page": ({"code": "FQ-ABC"}, {"GET": PURCHASE}),
    "ticket-qr": ({"code": "FQ-ABC"}, {"GET": PURCHASE}),
    "payment-return-page": ({}, {"GET": PURCHASE}),
    # waiting: a customer already in line, or signed in
    "queue": ({"event_id": E}, {"POST": ARRIVAL, "DELETE": WAITING, "GET": WAITING}),
    "queue-position": ({"event_id": E}, {"GET": WAITING}),
    "queue-state": ({"event_id": E}, {"GET": WAITING}),
    "queue-ws-ticket": ({"event_id": E}, {"POST": WAITING}),
    "me-event": ({"event_id": E}, {"GET": WAITING}),
    "me": ({}, {"GET": WAITING}),
    "me-holds": ({}, {"GET": WAITING}),
    "logout": ({}, {"POST": WAITING}),
    # arrival: joining, signing in, browsing
    "otp-request": ({}, {"POST": ARRIVAL}),
    "otp-verify": ({}, {"POST": ARRIVAL}),
    "event-list": ({}, {"GET": ARRIVAL}),
    "event-detail": ({"event_id": E}, {"GET": ARRIVAL}),
    "event-list-page": ({}, {"GET": ARRIVAL}),
    "event-page": ({"event_id": E}, {"GET": ARRIVAL}),
    "waiting-room-page": ({"event_id": E}, {"GET": ARRIVAL}),
    "signin-page": ({}, {"GET": ARRIVAL}),
    "schema": ({}, {"GET": ARRIVAL}),
    "docs": ({}, {"GET": ARRIVAL}),
    "redoc": ({}, {"GET": ARRIVAL}),
}


def named_routes() -> set[str]:
    names: set[str] = set()

    def walk(patterns: list) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                if p.namespace != "admin":
                    walk(p.url_patterns)
            elif isinstance(p, URLPattern) and p.name:
                names.add(p.name)

    walk(get_resolver().url_patterns)
    return names


def test_every_named_route_has_a_lane_decided_here():
    """A new route fails here until someone decides whose lane it joins."""
    assert named_routes() == set(ROUTES)


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_route_lane(name):
    kwargs, lanes = ROUTES[name]
    path = reverse(name, kwargs=kwargs)
    for method, expected in lanes.items():
        assert lane(method, path) == expected, (method, path)


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("GET", "/admin/", PURCHASE),
        ("POST", "/admin/payments/payment/", PURCHASE),
        ("GET", "/static/storefront/queue/main.js", ARRIVAL),
        ("GET", "/api/v1/nowhere/", ARRIVAL),
        ("GET", "/", ARRIVAL),
        ("POST", f"/api/v1/events/{E}/queue/position/", WAITING),  # a refusal, still theirs
        ("POST", "/api/v1/events/not-a-uuid/claims/", ARRIVAL),  # a 404 is no purchase
        ("GET", "/healthz/extra", ARRIVAL),
    ],
)
def test_other_paths(method, path, expected):
    assert lane(method, path) == expected


def wait_until(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_a_freed_slot_goes_to_purchases_then_the_waiting_room_and_arrivals_in_turns():
    lanes = Lanes(slots=1)
    lanes.acquire(ARRIVAL)  # the slot is taken
    order: list[str] = []
    queued = [("a1", ARRIVAL), ("w1", WAITING), ("a2", ARRIVAL), ("p1", PURCHASE), ("w2", WAITING)]

    def request(name: str, lane_name: str) -> None:
        lanes.acquire(lane_name)
        order.append(name)
        lanes.release()

    threads = []
    for n, (name, lane_name) in enumerate(queued, start=1):
        t = threading.Thread(target=request, args=(name, lane_name))
        t.start()
        threads.append(t)
        wait_until(lambda n=n: sum(lanes.waiting().values()) == n)  # queued in this order
    assert lanes.waiting() == {PURCHASE: 1, WAITING: 2, ARRIVAL: 2}
    lanes.release()
    for t in threads:
        t.join(5)
    assert order == ["p1", "w1", "a1", "w2", "a2"]
    # Every slot came back: two more can run without waiting.
    lanes.acquire(ARRIVAL)
    lanes.release()
    assert lanes.waiting() == {PURCHASE: 0, WAITING: 0, ARRIVAL: 0}


def test_arrivals_get_every_other_slot_while_the_waiting_room_floods():
    lanes = Lanes(slots=1)
    lanes.acquire(WAITING)
    order: list[str] = []

    def request(name: str, lane_name: str) -> None:
        lanes.acquire(lane_name)
        order.append(name)
        lanes.release()

    queued = [(f"w{i}", WAITING) for i in range(6)] + [("a0", ARRIVAL), ("a1", ARRIVAL)]
    threads = []
    for n, (name, lane_name) in enumerate(queued, start=1):
        threads.append(threading.Thread(target=request, args=(name, lane_name)))
        threads[-1].start()
        wait_until(lambda n=n: sum(lanes.waiting().values()) == n)
    lanes.release()
    for t in threads:
        t.join(5)
    assert order == ["w0", "a0", "w1", "a1", "w2", "w3", "w4", "w5"]


def test_no_more_than_the_slots_run_at_once():
    lanes = Lanes(slots=3)
    running, peak, lock = 0, 0, threading.Lock()

    def request(i: int) -> None:
        nonlocal running, peak
        lanes.acquire((PURCHASE, WAITING, ARRIVAL)[i % 3])
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.002)
        with lock:
            running -= 1
        lanes.release()

    with ThreadPoolExecutor(max_workers=24) as pool:
        list(pool.map(request, range(300)))
    assert peak == 3


class Body(list):
    closed = False

    def close(self) -> None:
        self.closed = True


def test_the_slot_comes_back_when_the_response_is_closed_or_the_app_fails():
    bodies: list[Body] = []

    def app(environ, start_response):
        if environ["PATH_INFO"] == "/boom":
            raise RuntimeError("boom")
        start_response("200 OK", [])
        bodies.append(Body([b"ok"]))
        return bodies[-1]

    laned = LanedApp(app, slots=1)
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/healthz"}
    response = laned(environ, lambda *a: None)
    assert laned.lanes.waiting() == {PURCHASE: 0, WAITING: 0, ARRIVAL: 0}
    taken = threading.Thread(target=laned.lanes.acquire, args=(ARRIVAL,), daemon=True)
    taken.start()
    wait_until(lambda: laned.lanes.waiting()[ARRIVAL] == 1)  # the slot is held until close
    assert list(response) == [b"ok"]
    response.close()
    taken.join(5)
    assert not taken.is_alive() and bodies[0].closed
    response.close()  # a second close gives nothing back twice
    laned.lanes.release()  # the thread's slot

    with pytest.raises(RuntimeError):
        laned({"REQUEST_METHOD": "GET", "PATH_INFO": "/boom"}, lambda *a: None)
    laned({"REQUEST_METHOD": "GET", "PATH_INFO": "/x"}, lambda *a: None).close()  # not stuck


class Dribble:
    """A request body arriving a few bytes at a time, the rest held back until
    ``finish`` is set (a slow client)."""

    def __init__(self, body: bytes, first: int) -> None:
        self.body, self.sent, self.first = body, 0, first
        self.finish = threading.Event()

    def read(self, size: int = -1) -> bytes:
        if self.sent >= self.first:
            self.finish.wait(5)
        end = self.first if self.sent < self.first else len(self.body)
        chunk = self.body[self.sent : min(end, self.sent + 3)]
        self.sent += len(chunk)
        return chunk


def test_a_body_is_read_whole_before_the_request_takes_a_slot():
    seen: list[bytes] = []

    def app(environ, start_response):
        seen.append(environ["wsgi.input"].read())
        start_response("200 OK", [])
        return [b"ok"]

    laned = LanedApp(app, slots=1)
    body = b'{"email": "slow@example.com"}'
    slow = Dribble(body, first=10)
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/api/v1/auth/otp/request/",
               "CONTENT_LENGTH": str(len(body)), "wsgi.input": slow}  # fmt: skip
    sender = threading.Thread(target=lambda: laned(environ, lambda *a: None).close(), daemon=True)
    sender.start()
    wait_until(lambda: slow.sent == 10)
    # The only slot is free while the slow body is still coming.
    health = {"REQUEST_METHOD": "GET", "PATH_INFO": "/healthz", "wsgi.input": io.BytesIO()}
    laned(health, lambda *a: None).close()
    assert seen == [b""] and sender.is_alive()
    slow.finish.set()
    sender.join(5)
    assert seen == [b"", body]  # whole, from reads of 3 bytes


@pytest.mark.parametrize(
    ("length", "buffered"),
    [("", False), ("0", False), ("nonsense", False), ("5", True), ("6", False)],
)
def test_which_bodies_are_read_ahead(length, buffered):
    """Up to the limit given (config/wsgi.py: what Django holds in memory)."""
    stream = Dribble(b"hello", first=5)
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/x", "CONTENT_LENGTH": length,
               "wsgi.input": stream}  # fmt: skip
    inputs = []

    def app(environ, start_response):
        inputs.append(environ["wsgi.input"])
        start_response("200 OK", [])
        return []

    LanedApp(app, slots=1, read_ahead=5)(environ, lambda *a: None).close()
    assert (inputs[0] is not stream) == buffered
    assert stream.sent == (5 if buffered else 0)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_purchase_overtakes_a_flood_of_arrivals_in_the_web_server():
    """granian, one worker running one request at a time: while a slow
    request holds it, 30 arrivals queue, then a purchase-lane request comes.
    It runs as soon as the slot is free, before every arrival."""
    settings = {"WEB_CONCURRENCY": "1", "WEB_THREADS": "1", "READYZ_WORKER_TIMEOUT_SECONDS": "1"}
    with web_process(**settings) as base:
        host = base.split("//")[1]
        finished: dict[str, float] = {}

        def get(name_path: tuple[str, str]) -> int:
            name, path = name_path
            conn = http.client.HTTPConnection(host, timeout=30)
            try:
                conn.request("GET", path)
                status = conn.getresponse().status
            finally:
                conn.close()
            finished[name] = time.monotonic()
            return status

        flood = [(f"arrival-{i}", "/api/v1/events/") for i in range(30)]
        with ThreadPoolExecutor(max_workers=40) as pool:
            blocker = pool.submit(get, ("blocker", "/readyz"))  # waits ~1 s for a Celery worker
            time.sleep(0.3)
            arrivals = [pool.submit(get, item) for item in flood]
            time.sleep(0.3)  # every arrival is waiting for the slot by now
            purchase = pool.submit(get, ("purchase", "/healthz"))
            assert blocker.result() == 503
            assert purchase.result() == 200
            assert [f.result() for f in arrivals] == [200] * len(flood)
    first_arrival = min(finished[name] for name, _ in flood)
    assert finished["purchase"] < first_arrival, (
        finished["purchase"] - finished["blocker"],
        first_arrival - finished["blocker"],
    )


def web_connections() -> int:
    """Client sessions on the test database other than this test's own."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
        return cur.fetchone()[0]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_holds_its_slots_worth_of_postgres_connections_through_a_flood():
    """Hundreds of threads wait in a worker, but Django runs on WEB_THREADS of
    them at a time over a pool of as many connections, all opened with the
    first request: 40 requests at once leave exactly 3 sessions, where one
    persistent connection per thread would have left dozens."""
    before = web_connections()
    settings = {"WEB_CONCURRENCY": "1", "WEB_THREADS": "3", "READYZ_WORKER_TIMEOUT_SECONDS": "0.2"}
    with web_process(**settings) as base:
        host = base.split("//")[1]

        def readyz(_: int) -> int:  # reads Postgres, then waits 0.2 s for a Celery worker
            conn = http.client.HTTPConnection(host, timeout=30)
            try:
                conn.request("GET", "/readyz")
                return conn.getresponse().status
            finally:
                conn.close()

        # web_process waited for /healthz: that first request opened all three
        wait_until(lambda: web_connections() - before == 3)
        peak = 0
        with ThreadPoolExecutor(max_workers=40) as pool:
            answers = pool.map(readyz, range(40))
            for _ in range(10):
                peak = max(peak, web_connections() - before)
                time.sleep(0.1)
            assert list(answers) == [503] * 40
        assert peak == 3
        assert web_connections() - before == 3
