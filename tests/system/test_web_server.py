"""The web process as `make run` starts it (granian, two workers, each
running WEB_THREADS requests at once): idle and slow clients never hold a
worker, and a worker's slots wait out slow calls side by side.

A browser keeps sockets open between requests, and some clients send their
request slowly. Under gunicorn's sync workers each such socket held a whole
worker, so two pre-opened sockets froze /healthz for 30 s. Here 50 idle
connections, 10 half-sent requests and 10 requests whose body never finishes
(more than the process's slots: a worker that handed a request to Django
before its body was in would hold a slot for as long as the client dribbles)
are open while /healthz is asked, and it still answers within a second, on a
fresh connection and on a reused one."""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import pytest

from tests.support.processes import web_process

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

IDLE_CONNECTIONS = 50
SLOW_CLIENTS = 10
SLOW_BODIES = 10  # > 2 workers x WEB_THREADS (4)


@pytest.fixture
def web(transactional_db) -> Iterator[str]:
    with web_process() as base:
        yield base


def healthz_seconds(conn: http.client.HTTPConnection) -> float:
    started = time.monotonic()
    conn.request("GET", "/healthz")
    response = conn.getresponse()
    body = response.read()
    assert response.status == 200, body
    return time.monotonic() - started


def test_idle_and_slow_connections_never_hold_a_worker(web):
    port = int(web.rsplit(":", 1)[1])
    with ExitStack() as held:
        for _ in range(IDLE_CONNECTIONS):  # connected, nothing sent (a browser's spare socket)
            held.enter_context(socket.create_connection(("127.0.0.1", port), timeout=5))
        for _ in range(SLOW_CLIENTS):  # half a request, the rest never comes
            sock = held.enter_context(socket.create_connection(("127.0.0.1", port), timeout=5))
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        for i in range(SLOW_BODIES):  # the headers, then a tenth of the body promised
            path = ("/api/v1/auth/otp/request/", "/api/v1/auth/otp/verify/")[i % 2]
            sock = held.enter_context(socket.create_connection(("127.0.0.1", port), timeout=5))
            sock.sendall(
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n".encode()
                + b'{"email": "'
                + b"a" * 89
            )
        time.sleep(0.5)  # every one of them accepted (or queued) by now

        reused = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        held.callback(reused.close)
        seconds = [healthz_seconds(reused) for _ in range(3)]  # keep-alive: one socket
        fresh = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        held.callback(fresh.close)
        seconds.append(healthz_seconds(fresh))

    # The timeout of 1 s on each request already fails the test when it is
    # exceeded; this names the figures.
    assert max(seconds) < 1.0, seconds


@pytest.mark.parametrize(("threads", "side_by_side"), [("1", False), ("2", True)])
def test_web_threads_let_a_worker_wait_out_two_slow_calls_at_once(
    transactional_db, threads, side_by_side
):
    """WEB_THREADS: requests that wait on something else (here /readyz, which
    waits a second for a Celery worker that is not there; in a sale, the
    payment gateway) share a worker's wait when it has threads for them."""
    settings = {"WEB_CONCURRENCY": "1", "WEB_THREADS": threads}
    with web_process(READYZ_WORKER_TIMEOUT_SECONDS="1", **settings) as base:

        def readyz(_: int) -> int:
            conn = http.client.HTTPConnection(base.split("//")[1], timeout=10)
            try:
                conn.request("GET", "/readyz")
                return conn.getresponse().status
            finally:
                conn.close()

        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=2) as pool:
            assert list(pool.map(readyz, range(2))) == [503, 503]  # no worker answered
        seconds = time.monotonic() - started
    if side_by_side:
        assert seconds < 1.9, seconds  # one wait for both
    else:
        assert seconds >= 2.0, seconds  # one after the other


def post_raw(port: int, path: str, body: bytes, *, pause: float) -> tuple[int, bytes]:
    """POST ``body`` on a raw socket, its second half ``pause`` seconds after
    the headers and the first (a slow client); the status and body answered."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        half = len(body) // 2
        sock.sendall(head.encode() + body[:half])
        time.sleep(pause)
        sock.sendall(body[half:])
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def test_a_body_sent_slowly_arrives_whole(web):
    """The web process reads a body before the request takes a slot
    (fairqueue/lanes.py); a body that comes in pieces is read to its end."""
    port = int(web.rsplit(":", 1)[1])
    answers = [
        post_raw(port, "/api/v1/auth/otp/request/", json.dumps({"email": email}).encode(), pause=p)
        for email, p in (("at.once@example.com", 0), ("slow.sender@example.com", 0.5))
    ]
    assert [status for status, _ in answers] == [202, 202], answers
    assert json.loads(answers[1][1])["status"] == "sent"
