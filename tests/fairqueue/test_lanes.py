"""Request lanes (fairqueue/lanes.py): a web worker gives its slots to
purchases, the waiting room and arrivals in turns, first come first served
within a lane; every route has the lane its customers need, and only a
request that proves who sent it rides above the arrival lane."""

from __future__ import annotations

import http.client
import io
import json
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from wsgiref.util import setup_testing_defaults

import pytest
from django.conf import settings
from django.db import connection
from django.test import RequestFactory, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from customers import authentication, tokens
from customers.tokens import CUSTOMER_AUDIENCE, customer_token_issue
from fairqueue.lanes import (
    ARRIVAL,
    PURCHASE,
    WAITING,
    LanedApp,
    Lanes,
    RoutedHandler,
    declare,
    lane,
    place,
)
from payments.paystack import sign
from queueing import views
from tests.support.processes import web_process
from tests.support.sales import join, make_customers, make_event, on_sale

E, T, C, P = (str(uuid.uuid4()) for _ in range(4))

# Every named route, the arguments to reverse it with, and its lane for a
# request with a customer token whose signature checks.
ROUTES: dict[str, tuple[dict, dict[str, str]]] = {
    # purchase: a signed-in customer's claim or payment (the webhook: below)
    "event-claim-create": ({"event_id": E}, {"POST": PURCHASE}),
    "claim-detail": ({"claim_id": C}, {"GET": PURCHASE, "DELETE": PURCHASE}),
    "claim-payments": ({"claim_id": C}, {"POST": PURCHASE}),
    "payment-detail": ({"payment_id": P}, {"GET": PURCHASE}),
    "queue-extend": ({"event_id": E}, {"POST": PURCHASE}),  # more time to choose, then buy
    "paystack-webhook": ({}, {"POST": ARRIVAL}),  # a customer token is no signature
    "paystack-webhook-no-slash": ({}, {"POST": ARRIVAL}),
    # waiting: a signed-in customer in line, their account, tickets and seat maps
    "queue": ({"event_id": E}, {"POST": ARRIVAL, "DELETE": WAITING, "GET": WAITING}),
    "queue-position": ({"event_id": E}, {"GET": WAITING}),
    "queue-ws-ticket": ({"event_id": E}, {"POST": WAITING}),
    "waitlist": ({"event_id": E}, {"POST": ARRIVAL, "DELETE": WAITING, "GET": WAITING}),
    "me-event": ({"event_id": E}, {"GET": WAITING}),
    "me": ({}, {"GET": WAITING}),
    "me-holds": ({}, {"GET": WAITING}),
    "logout": ({}, {"POST": WAITING}),
    "me-tickets": ({}, {"GET": WAITING}),
    # A holder's own tickets: returns and transfers, in the account's lane.
    "ticket-return": (
        {"code": "FQ-ABC"},
        {"GET": WAITING, "POST": WAITING, "DELETE": WAITING},
    ),
    "ticket-transfer": ({"code": "FQ-ABC"}, {"POST": WAITING}),
    "transfer-detail": ({"transfer_id": C}, {"DELETE": WAITING}),
    "transfer-accept": ({"transfer_id": C}, {"POST": WAITING}),
    "tier-seat-map": ({"event_id": E, "tier_id": T}, {"GET": WAITING}),
    # arrival: joining, signing in, pages, the door, health and metrics
    "queue-state": ({"event_id": E}, {"GET": ARRIVAL}),
    "queue-draw-shard": ({"event_id": E, "shard": "ab"}, {"GET": ARRIVAL}),
    "otp-request": ({}, {"POST": ARRIVAL}),
    "otp-verify": ({}, {"POST": ARRIVAL}),
    "event-list": ({}, {"GET": ARRIVAL}),
    "event-detail": ({"event_id": E}, {"GET": ARRIVAL}),
    "ticket-check-in": ({"event_id": E}, {"POST": ARRIVAL}),
    "healthz": ({}, {"GET": ARRIVAL}),
    "readyz": ({}, {"GET": ARRIVAL}),
    "metrics": ({}, {"GET": ARRIVAL}),
    "event-list-page": ({}, {"GET": ARRIVAL}),
    "event-page": ({"event_id": E}, {"GET": ARRIVAL}),
    "waiting-room-page": ({"event_id": E}, {"GET": ARRIVAL}),
    "check-in-page": ({"event_id": E}, {"GET": ARRIVAL}),
    "check-in-count": ({"event_id": E}, {"GET": ARRIVAL}),
    "my-tickets-page": ({}, {"GET": ARRIVAL}),
    "ticket-page": ({"code": "FQ-ABC"}, {"GET": ARRIVAL}),
    "ticket-qr": ({"code": "FQ-ABC"}, {"GET": ARRIVAL}),
    "payment-return-page": ({}, {"GET": ARRIVAL}),
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


def environ(method: str, path: str, token: str | None = None, **extra) -> dict:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return RequestFactory().generic(method, path, **headers, **extra).environ


def customer_token() -> str:
    return customer_token_issue(customer_id=uuid.uuid4(), email="ada@example.com")[0]


def test_every_named_route_has_a_lane_decided_here():
    """A new route fails here until someone decides whose lane it joins."""
    assert named_routes() == set(ROUTES)


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_route_lane_for_a_signed_in_customer_and_arrival_for_anyone_else(name):
    kwargs, lanes = ROUTES[name]
    path = reverse(name, kwargs=kwargs)
    token = customer_token()
    with override_settings(TOKEN_SIGNING_KEY="not the key of this site " * 2):
        forged = customer_token()  # the right shape, signed with another key
    for method, expected in lanes.items():
        assert lane(environ(method, path, token)) == expected, (method, path)
        assert lane(environ(method, path)) == ARRIVAL, (method, path)
        assert lane(environ(method, path, forged)) == ARRIVAL, (method, path)
        assert lane(environ(method, path, "not.a.token")) == ARRIVAL, (method, path)


def test_an_expired_or_foreign_audience_token_is_no_proof():
    from fairqueue.tokens import sign as sign_token

    path = reverse("event-claim-create", kwargs={"event_id": E})
    expired, _ = sign_token({"sub": str(uuid.uuid4())}, audience=CUSTOMER_AUDIENCE,
                            ttl=timedelta(seconds=-60))  # fmt: skip
    other, _ = sign_token({"sub": str(uuid.uuid4())}, audience="fairqueue:other",
                          ttl=timedelta(hours=1))  # fmt: skip
    assert lane(environ("POST", path, expired)) == ARRIVAL
    assert lane(environ("POST", path, other)) == ARRIVAL


def test_a_webhook_rides_in_the_purchase_lane_only_with_its_signature():
    body = json.dumps({"event": "charge.success", "data": {"reference": "ref"}}).encode()
    path = reverse("paystack-webhook")

    def webhook(signature: str, read_ahead: bool = True) -> str:
        request = environ("POST", path, HTTP_X_PAYSTACK_SIGNATURE=signature,
                          CONTENT_LENGTH=str(len(body)))  # fmt: skip
        request["wsgi.input"] = io.BytesIO(body) if read_ahead else request["wsgi.input"]
        return lane(request)

    good = sign(body, settings.PAYSTACK_SECRET_KEY)
    assert webhook(good) == PURCHASE
    assert lane(environ("POST", "/api/v1/webhooks/paystack")) == ARRIVAL  # no signature
    assert webhook(sign(body, "not our secret")) == ARRIVAL
    assert webhook(good[:-2] + "00") == ARRIVAL
    assert webhook("é" * 10) == ARRIVAL  # not even ASCII
    assert webhook(good, read_ahead=False) == ARRIVAL  # a body too big to read ahead


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/admin/"),
        ("POST", "/admin/payments/payment/"),
        ("GET", "/tickets/AAAABBBBCCCCDDDD/"),
        ("GET", "/payments/return/"),
        ("GET", "/static/storefront/queue/main.js"),
        ("GET", "/api/v1/nowhere/"),
        ("GET", "/"),
        ("POST", "/api/v1/events/not-a-uuid/claims/"),  # a 404 is no purchase
        ("GET", "/healthz/extra"),
        ("GET", "/healthz"),
        ("GET", "/metrics"),
    ],
)
def test_every_other_path_is_an_arrival_even_with_a_token(method, path):
    assert lane(environ(method, path, customer_token())) == ARRIVAL


def test_a_lane_above_arrival_needs_a_proof():
    def view(request):
        return None

    with pytest.raises(ValueError, match="proof"):
        declare(view, PURCHASE)
    with pytest.raises(ValueError, match="proof"):
        declare(view, {"POST": ARRIVAL, "*": WAITING})
    with pytest.raises(ValueError, match="unknown lane"):
        declare(view, "express", proof=lambda environ: True)
    assert declare(view, ARRIVAL) is view


def wait_until(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_a_freed_slot_goes_to_each_lane_in_its_turn():
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


def test_a_flood_of_purchases_leaves_every_other_slot_to_the_other_lanes():
    lanes = Lanes(slots=1)
    lanes.acquire(PURCHASE)
    order: list[str] = []

    def request(name: str, lane_name: str) -> None:
        lanes.acquire(lane_name)
        order.append(name)
        lanes.release()

    queued = [(f"p{i}", PURCHASE) for i in range(6)] + [("w0", WAITING), ("a0", ARRIVAL)]
    threads = []
    for n, (name, lane_name) in enumerate(queued, start=1):
        threads.append(threading.Thread(target=request, args=(name, lane_name)))
        threads[-1].start()
        wait_until(lambda n=n: sum(lanes.waiting().values()) == n)
    lanes.release()
    for t in threads:
        t.join(5)
    assert order == ["p0", "w0", "p1", "a0", "p2", "p3", "p4", "p5"]


def test_within_a_lane_the_routes_take_turns_and_keep_their_own_order():
    lanes = Lanes(slots=1)
    lanes.acquire(ARRIVAL, "tickets/<str:code>/")
    order: list[str] = []

    def request(name: str, route: str) -> None:
        lanes.acquire(ARRIVAL, route)
        order.append(name)
        lanes.release()

    queued = [(f"404-{i}", "tickets/<str:code>/") for i in range(5)] + [
        ("signin", "api/v1/auth/otp/request/"), ("join-0", "api/v1/events/<uuid:event_id>/queue/"),
        ("join-1", "api/v1/events/<uuid:event_id>/queue/"),
    ]  # fmt: skip
    threads = []
    for n, (name, route) in enumerate(queued, start=1):
        threads.append(threading.Thread(target=request, args=(name, route)))
        threads[-1].start()
        wait_until(lambda n=n: sum(lanes.waiting().values()) == n)
    lanes.release()
    for t in threads:
        t.join(5)
    assert order == ["404-0", "signin", "join-0", "404-1", "join-1", "404-2", "404-3", "404-4"]


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


@pytest.mark.django_db(transaction=True)  # a request as the server runs it: its own connection use
def test_a_request_through_the_lanes_is_resolved_and_its_token_verified_once(monkeypatch):
    """The lane's proof verified the token and found the route: the view
    takes both (config/wsgi.py serves Django this way)."""
    event = make_event()
    customer, _ = join(event)
    token = customer_token_issue(customer_id=customer.id, email=customer.email)[0]
    calls = {"resolve": 0, "verify": 0}
    resolve, verify = URLResolver.resolve, tokens.customer_token_verify

    def counted_resolve(self, path):
        calls["resolve"] += self is get_resolver()  # the root: once per resolution
        return resolve(self, path)

    def counted_verify(token):
        calls["verify"] += 1
        return verify(token)

    monkeypatch.setattr(URLResolver, "resolve", counted_resolve)
    for module in (authentication, views):
        if hasattr(module, "customer_token_verify"):
            monkeypatch.setattr(module, "customer_token_verify", counted_verify)
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": reverse("queue-position", kwargs={"event_id": event.id}),
        "HTTP_AUTHORIZATION": f"Bearer {token}",
        "SERVER_NAME": "testserver",
    }
    setup_testing_defaults(environ)
    statuses: list[str] = []

    answer = LanedApp(RoutedHandler(), slots=1)(environ, lambda s, h, e=None: statuses.append(s))
    body = b"".join(answer)
    answer.close()

    assert statuses == ["200 OK"] and json.loads(body)["position"] == 1
    assert calls == {"resolve": 1, "verify": 1}


def test_a_path_is_resolved_once_for_all_its_requests_and_again_under_a_new_urlconf(
    monkeypatch,
):
    """Everyone waiting for an event reads the same position path: the lanes
    resolve it once (``_resolved``), and again once the URLconf changes."""
    calls = {"resolve": 0}
    resolve = URLResolver.resolve

    def counted_resolve(self, path):
        calls["resolve"] += self is get_resolver()  # the root: once per resolution
        return resolve(self, path)

    monkeypatch.setattr(URLResolver, "resolve", counted_resolve)
    path = reverse("queue-position", kwargs={"event_id": uuid.uuid4()})

    def routed() -> str:
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": path}
        setup_testing_defaults(environ)
        return place(environ)[1]

    routes = [routed() for _ in range(3)]
    with override_settings(ROOT_URLCONF=settings.ROOT_URLCONF):  # Django clears its URL caches
        again = routed()

    assert routes == [again] * 3 and again.endswith("events/<uuid:event_id>/queue/position/")
    assert calls == {"resolve": 2}


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
    request holds it, 30 arrivals queue, then a signed-in customer's claim
    comes. It runs as soon as the slot is free, before every arrival."""
    settings = {"WEB_CONCURRENCY": "1", "WEB_THREADS": "1", "READYZ_WORKER_TIMEOUT_SECONDS": "1"}
    with web_process(**settings) as base:
        host = base.split("//")[1]
        finished: dict[str, float] = {}

        claim = f"/api/v1/events/{uuid.uuid4()}/claims/"
        [buyer] = make_customers(1)
        token, _ = customer_token_issue(customer_id=buyer.id, email=buyer.email)
        signed_in = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

        def get(name_path: tuple[str, str]) -> int:
            name, path = name_path
            conn = http.client.HTTPConnection(host, timeout=30)
            try:
                if path == claim:
                    conn.request("POST", path, body=b"{}", headers=signed_in)
                else:
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
            purchase = pool.submit(get, ("purchase", claim))
            assert blocker.result() == 503
            assert purchase.result() == 422  # a claim naming no tier: answered, in its lane
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


FLOODERS = 32
FLOOD_PATH = "/tickets/AAAABBBBCCCCDDDD/"  # no such ticket, no sign-in: a 404
# The flood runs in a process of its own (its threads would otherwise share
# the GIL with the requests this test times): FLOODERS keep-alive connections
# loop FLOOD_PATH until stdin closes. It says "flooding" once every connection
# had an answer, and at the end how many connections flooded, with how many answers.
FLOOD = """
import http.client, sys, threading
host, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
stop, counts, started = threading.Event(), [], threading.Barrier(n + 1)
def flood():
    conn, answers = http.client.HTTPConnection(host, timeout=30), 0
    while not stop.is_set():
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        assert response.status == 404, response.status
        answers += 1
        if answers == 1:
            started.wait()
    counts.append(answers)
threads = [threading.Thread(target=flood) for _ in range(n)]
for t in threads:
    t.start()
started.wait()
print("flooding", flush=True)
sys.stdin.read()
stop.set()
for t in threads:
    t.join(30)
print(len(counts), sum(counts))
"""


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_flood_of_anonymous_requests_leaves_position_reads_sign_in_and_joins_answering():
    """The web process as `make run` starts it (two workers), one slot per
    worker: each freed slot is a turn given by the lanes, and what is timed is
    their turn-taking rather than four requests sharing a worker's GIL on a
    busy machine. 32 keep-alive connections loop a 404 without signing in;
    meanwhile a customer in line reads their position, someone signs in and
    others join, each answered within a second. Anonymous requests take their
    turn among arrivals, never above the waiting room, and a flood of one
    route leaves the other routes of its lane their turns."""
    event = on_sale().event
    waiting, warm, *joiners = make_customers(5)
    with web_process(WEB_THREADS="1") as base:
        host = base.split("//")[1]
        api = f"/api/v1/events/{event.id}"

        def call(method: str, path: str, customer=None, body: dict | None = None):
            headers = {"Content-Type": "application/json"}
            if customer is not None:
                token = customer_token_issue(customer_id=customer.id, email=customer.email)[0]
                headers["Authorization"] = f"Bearer {token}"
            conn = http.client.HTTPConnection(host, timeout=10)
            try:
                started = time.monotonic()
                data = None if body is None else json.dumps(body).encode()
                conn.request(method, path, body=data, headers=headers)
                response = conn.getresponse()
                response.read()
                return response.status, time.monotonic() - started
            finally:
                conn.close()

        def probes(n: int, joiner) -> dict[str, tuple]:
            return {
                "position": ("GET", f"{api}/queue/position/", waiting, None),
                "sign-in": ("POST", "/api/v1/auth/otp/request/", None,
                            {"email": f"flooded{n}@example.com"}),
                "join": ("POST", f"{api}/queue/", joiner, None),
            }  # fmt: skip

        assert call("POST", f"{api}/queue/", waiting)[0] == 201
        for method, path, customer, body in probes(9, warm).values():  # each route warm
            assert call(method, path, customer, body)[0] in (200, 201, 202)
        flood = subprocess.Popen(  # noqa: S603 - our own script
            [sys.executable, "-c", FLOOD, host, FLOOD_PATH, str(FLOODERS)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert flood.stdout.readline() == "flooding\n"
            time.sleep(0.2)  # every connection sends its next request meanwhile
            seconds: dict[str, list[float]] = {}
            for n, joiner in enumerate(joiners):
                for name, (method, path, customer, body) in probes(n, joiner).items():
                    status, took = call(method, path, customer, body)
                    assert status in (200, 201, 202), (name, status)
                    seconds.setdefault(name, []).append(round(took, 3))
        finally:
            out, _ = flood.communicate(timeout=60)
        assert flood.returncode == 0, out
    connections, answers = map(int, out.split())  # the lines after "flooding"
    assert connections == FLOODERS and answers > 2 * FLOODERS, out  # it did flood
    assert max(max(v) for v in seconds.values()) < 1.0, (seconds, answers)
