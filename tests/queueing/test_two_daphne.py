"""The queue WebSocket across two real daphne processes sharing the Redis
channel layer: the waiting room works across several daphne processes.

Two daphne subprocesses serve the test database and Redis; one waiting
customer listens on daphne A, another on daphne B. The admission tick and
the pause run here, in the test process (as a Celery worker would run them),
so every push crosses processes through Redis: the tick's one message
reaches each daphne's registry of the event's sockets; the admitted
customer gets ``admitted`` with their own token on A (and nothing more: out
of the line), the next in line gets the line state on B, and both get
``paused``. With a channel layer local to each
process, nothing published here would reach either daphne.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator

import pytest
import requests

from customers.tokens import customer_token_issue
from devtools import devstack
from events.services import event_pause
from queueing import services
from queueing.models import QueueEntry
from queueing.tokens import admission_token_read
from tests.support.processes import child_env, healthz_ok
from tests.support.sales import join, make_event
from tests.support.websocket import WebSocket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ASGI_APP = "config.asgi:application"


@pytest.fixture
def two_daphnes(transactional_db, tmp_path) -> Iterator[list[int]]:
    """Two daphne processes on free ports; their ports. Stopped before the
    test database is flushed (they hold pooled connections to it)."""
    env = child_env()
    ports: list[int] = []
    while len(ports) < 2:
        port = devstack.free_port()
        if port not in ports:
            ports.append(port)
    logs = [tmp_path / f"daphne-{port}.log" for port in ports]
    procs = []
    for port, log in zip(ports, logs, strict=True):
        with log.open("wb") as out:
            argv = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), ASGI_APP]
            procs.append(devstack.spawn(argv, env=env, stdout=out))
    try:
        deadline = time.monotonic() + 30
        for proc, port, log in zip(procs, ports, logs, strict=True):
            while not healthz_ok(f"http://127.0.0.1:{port}"):
                assert proc.poll() is None and time.monotonic() < deadline, (
                    f"daphne on port {port} did not start:\n{devstack.log_tail(log)}"
                )
                time.sleep(0.1)
        yield ports
    finally:
        devstack.stop_groups(procs)


def test_a_tick_here_reaches_customers_on_two_daphne_processes(two_daphnes):
    port_a, port_b = two_daphnes
    event = make_event(tickets=1)  # one ticket: the tick admits the first customer only
    first, _ = join(event)
    second, _ = join(event)

    def path(customer, ticket_port: int) -> str:
        """A ticket asked of one daphne's HTTP side, for a socket on the
        other: tickets live in the shared Redis, not in a process."""
        token = customer_token_issue(customer_id=customer.id, email=customer.email)[0]
        answer = requests.post(
            f"http://127.0.0.1:{ticket_port}/api/v1/events/{event.id}/queue/ws-ticket/",
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )
        assert answer.status_code == 201, answer.text
        return f"/ws/events/{event.id}/queue/?ticket={answer.json()['ticket']}"

    on_a = WebSocket(port_a, path(first, ticket_port=port_b))
    on_b = WebSocket(port_b, path(second, ticket_port=port_a))
    try:
        snapshots = [on_a.receive(), on_b.receive()]
        report = services.admission_tick_event(event_id=event.id)
        got_a = [on_a.receive()]
        got_b = [on_b.receive()]
        quiet = on_a.receive_nothing() and on_b.receive_nothing()
        event_pause(event_id=event.id)
        paused = [on_a.receive(), on_b.receive()]
    finally:
        on_a.close()
        on_b.close()

    assert [(s["type"], s["status"], s["position"]) for s in snapshots] == [
        ("position", "WAITING", 1),
        ("position", "WAITING", 2),
    ]
    assert report.admitted == 1
    # daphne A: the first customer's own admission, with their token.
    [admitted] = got_a
    assert admitted["type"] == "admitted"
    entry = QueueEntry.objects.get(event=event, customer=first, status="ADMITTED")
    admission = admission_token_read(
        token=admitted["admission_token"], event_id=event.id, customer_id=first.id
    )
    assert admission.queue_entry_id == entry.id
    assert admitted["admission_expires_at"] == entry.admission_expires_at.isoformat()
    # daphne B: the next in line gets the line state, and not the other's admission.
    [line] = got_b
    assert (line["type"], line["served"], line["frontier"]) == ("line", 1, entry.score)
    assert quiet
    assert QueueEntry.objects.get(event=event, customer=second).status == "WAITING"
    # A push from a plain service call (fairqueue.broadcast) reaches both as well.
    assert paused == [{"type": "paused", "event_id": str(event.id)}] * 2
