"""Several of every process, one sale: two HTTP server processes,
two daphne and two Celery workers (beat once), as ``make run`` starts them,
on one Postgres and one Redis (and once with the hot data on the Redis
Cluster), sell a small flash sale. Customers go through both HTTP ports and
both socket servers, the way an L7 proxy without sticky sessions spreads
them; mid-sale one of each is killed (SIGKILL) and its customers move to the
other. The sale ends sold out, ``check_invariants`` clean, and every customer
admitted was told so over a socket (a push, or the snapshot of the socket
they reopened on the other daphne)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
import requests
from django.core.management import CommandError, call_command

from claims.tasks import claims_expire
from console.invariants import status_counts
from customers.models import Customer
from customers.tokens import customer_token_issue
from devtools.sandbox import SandboxServer
from events.services import TierSpec, default_sale_window, event_activate, event_create
from events.tasks import inventory_reconcile
from fairqueue.redis import get_layer_redis, get_redis
from payments.tasks import paying_claims_expire, payments_reconcile
from queueing.models import QueueEntry
from queueing.store import queue_store
from queueing.tasks import admission_tick, queue_reconcile
from tests.support.factories import OrganizerFactory
from tests.support.fleet import Fleet, Member
from tests.support.payments import CONTROL_TOKEN
from tests.support.processes import child_env
from tests.support.websocket import WebSocket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

CUSTOMERS = 36
TICKETS = 12
BATCH = 3
WINDOW_SECONDS = 15
SALE_TIMEOUT_S = 240


@pytest.fixture
def fleet(transactional_db, tmp_path, redis_backend, settings) -> Iterator[dict[str, Any]]:
    """web x2, ws x2, worker x2, beat x1, and the sandbox gateway here,
    its webhooks to the second web process (the first one gets killed)."""
    env = child_env(
        DJANGO_DEBUG="true",
        WEB_CONCURRENCY="1",
        ADMISSION_INTERVAL_SECONDS="1",
        EXPIRY_INTERVAL_SECONDS="2",
        RECONCILE_INTERVAL_SECONDS="3",
        PAYMENTS_SANDBOX="true",
        PAYSTACK_SECRET_KEY=settings.PAYSTACK_SECRET_KEY,
        REDIS_CLUSTER_URL=settings.REDIS_CLUSTER_URL if redis_backend == "cluster" else "",
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"),
        PAYMENT_STALE_SECONDS="20",
    )
    settings.PAYMENT_STALE_SECONDS = 20  # the settle phase's reconciliation, run here
    (tmp_path / "metrics").mkdir()
    group = Fleet(tmp_path, env)
    sandbox = None
    try:
        sandbox = SandboxServer(
            port=0, secret_key=settings.PAYSTACK_SECRET_KEY, control_token=CONTROL_TOKEN
        ).start()
        env["PAYSTACK_BASE_URL"] = settings.PAYSTACK_BASE_URL = sandbox.url
        webs = [group.start("web", i) for i in (1, 2)]
        wss = [group.start("ws", i) for i in (1, 2)]
        sandbox.app.webhook_url = f"{webs[1].url}/api/v1/webhooks/paystack/"
        workers = [group.start("worker", i, "--concurrency=1") for i in (1, 2)]
        beat = group.start("beat", 1)
        group.wait_listening()
        yield {"fleet": group, "web": webs, "ws": wss, "worker": workers, "beat": beat,
               "sandbox": sandbox, "backend": redis_backend}  # fmt: skip
    finally:
        group.stop()
        if sandbox is not None:
            sandbox.stop()


class Customer_:
    """One customer's side: HTTP through either web process (the other one
    when theirs is gone, as a proxy would), the socket on either daphne."""

    def __init__(self, index: int, customer: Customer, event_id: str, fleet: dict) -> None:
        self.index, self.event_id, self.fleet = index, event_id, fleet
        token, _ = customer_token_issue(customer_id=customer.id, email=customer.email)
        self.headers = {"Authorization": f"Bearer {token}"}
        self.id = str(customer.id)
        self.told_admitted = False
        self.admission_token: str | None = None
        self.outcome = "waiting"
        self.sockets_opened: list[str] = []

    def _ordered(self, kind: str) -> list[Member]:
        members: list[Member] = self.fleet[kind]
        first = self.index % 2
        return [members[first], members[1 - first]]

    def http(self, method: str, path: str, body: Any = None, **headers: str):
        """As the pages do: a 503, or a 409 while the same Idempotency-Key
        is in progress (its first request died with its web process), is
        asked again after Retry-After."""
        for _ in range(150):
            answer = self._once(method, path, body, **headers)
            busy = answer.status_code == 503 or (
                answer.status_code == 409 and "Retry-After" in answer.headers
            )
            if not busy:
                return answer
            time.sleep(min(2.0, float(answer.headers.get("Retry-After", 1))))
        return answer

    def _once(self, method: str, path: str, body: Any = None, **headers: str):
        last: Exception | None = None
        for web in self._ordered("web"):
            try:
                return requests.request(
                    method, web.url + path, json=body, timeout=20,
                    headers={**self.headers, **headers},
                )  # fmt: skip
            except requests.ConnectionError as exc:  # that process is gone: the other one
                last = exc
        raise AssertionError(f"no web process answered {path}") from last

    def open_socket(self) -> WebSocket:
        for ws in self._ordered("ws"):
            if ws.proc.poll() is not None:
                continue
            answer = self.http("post", f"/api/v1/events/{self.event_id}/queue/ws-ticket/")
            assert answer.status_code == 201, answer.text
            ticket = answer.json()["ticket"]
            try:
                sock = WebSocket(ws.port, f"/ws/events/{self.event_id}/queue/?ticket={ticket}")
            except (ConnectionError, OSError):
                continue
            self.sockets_opened.append(ws.name)
            return sock
        raise AssertionError("no daphne took the socket")

    def wait_for_admission(self, stop: threading.Event) -> None:
        sock = self.open_socket()
        try:
            while not stop.is_set():
                try:
                    message = sock.receive(timeout=1.0)
                except TimeoutError:
                    continue
                except (ConnectionError, OSError):  # its daphne died: the other one
                    sock.close()
                    sock = self.open_socket()
                    continue
                admitted = message.get("type") == "admitted" or (
                    message.get("type") == "position" and message.get("status") == "ADMITTED"
                )
                if admitted and message.get("admission_token"):
                    self.told_admitted = True
                    self.admission_token = message["admission_token"]
                    return
        finally:
            sock.close()

    def buy(self, tier_id: str, sandbox_url: str) -> None:
        answer = self.http(
            "post",
            f"/api/v1/events/{self.event_id}/claims/",
            {"admission_token": self.admission_token, "tier_id": tier_id, "quantity": 1},
            **{"Idempotency-Key": f"claim-{self.id}"},
        )
        if answer.status_code != 201:
            assert answer.status_code in (409, 410), answer.text  # sold out, never a 500
            self.outcome = f"claim:{answer.json()['error']['code']}"
            return
        claim = answer.json()
        answer = self.http(
            "post",
            f"/api/v1/claims/{claim['claim_id']}/payments/",
            {},
            **{"Idempotency-Key": f"pay-{self.id}"},
        )
        # 200: a retry found the payment its first request (on a killed web
        # process) had opened; the same checkout goes on.
        assert answer.status_code in (200, 201), answer.text
        paid = requests.post(
            f"{sandbox_url}/_sandbox/pay/{answer.json()['reference']}",
            json={"outcome": "success", "wait": True},
            headers={"X-Sandbox-Token": CONTROL_TOKEN},
            timeout=60,
        )
        assert paid.status_code == 200, paid.text
        assert all(w["result"] == 200 for w in paid.json()["data"]["webhooks"]), paid.text
        self.outcome = "paid"

    def run(self, tier_id: str, sandbox_url: str, stop: threading.Event) -> None:
        try:
            answer = self.http("post", f"/api/v1/events/{self.event_id}/queue/")
            assert answer.status_code in (200, 201), answer.text
            self.wait_for_admission(stop)
            if self.admission_token:
                self.buy(tier_id, sandbox_url)
        except Exception as exc:  # reported by the test, with the customer's index
            self.outcome = f"error: {exc!r}"


def sold(event_id: str) -> int:
    return status_counts(event_id=event_id)["claims"].get("CONFIRMED", 0)


def check_invariants(*args: str) -> dict:
    out = StringIO()
    with contextlib.suppress(CommandError):  # a failure is in the report
        call_command("check_invariants", "--json", *args, stdout=out)
    return json.loads(out.getvalue())


def test_two_of_every_process_sell_one_sale_and_survive_losing_one_of_each(fleet):
    start, end = default_sale_window()
    event = event_create(
        organizer=OrganizerFactory(),
        name="Scale-out sale",
        sale_start=start,
        sale_end=end,
        tiers=[TierSpec("Regular", 500_000, TICKETS)],
        admission_batch_size=BATCH,
        admission_window_seconds=WINDOW_SECONDS,
    )
    event_activate(event_id=event.pk)
    event_id, tier_id = str(event.pk), str(event.tiers.get().pk)
    people = Customer.objects.bulk_create(
        [Customer(email=f"scale{i}-{uuid.uuid4().hex[:6]}@example.test") for i in range(CUSTOMERS)]
    )
    customers = [Customer_(i, c, event_id, fleet) for i, c in enumerate(people)]
    stop = threading.Event()
    threads = [
        threading.Thread(target=c.run, args=(tier_id, fleet["sandbox"].url, stop), daemon=True)
        for c in customers
    ]
    for thread in threads:
        thread.start()

    killed = False
    deadline = time.monotonic() + SALE_TIMEOUT_S
    while sold(event_id) < TICKETS and time.monotonic() < deadline:
        if not killed and sold(event_id) >= TICKETS // 3:
            for kind in ("web", "ws", "worker"):
                fleet[kind][0].kill()  # one of each, mid-sale
            killed = True
        time.sleep(0.2)
    assert killed and sold(event_id) == TICKETS, (
        f"{status_counts(event_id=event_id)}\n{Counter(c.outcome for c in customers)}\n"
        + fleet["fleet"].logs()
    )

    assert fleet["worker"][0].proc.poll() is not None and fleet["beat"].proc.poll() is None
    # Settle: admissions nobody used lapse; the beat's tasks run once more,
    # here, after beat and the last worker stopped (nothing admits after it).
    time.sleep(WINDOW_SECONDS + 1)
    fleet["beat"].kill()
    fleet["worker"][1].kill()
    for task in (admission_tick, claims_expire, paying_claims_expire, payments_reconcile,
                 inventory_reconcile, queue_reconcile):  # fmt: skip
        task()
    time.sleep(1)
    stop.set()
    for thread in threads:
        thread.join(30)

    report = check_invariants("--event", event_id, "--settled", "--sold-out")
    [checked] = report["events"]
    failed = [f"{c['check']}: {c['detail']}" for c in checked["checks"] if not c["ok"]]
    assert report["ok"], "\n".join(failed)
    errors = [f"{c.index}: {c.outcome}" for c in customers if c.outcome.startswith("error")]
    assert errors == [], errors
    assert sum(c.outcome == "paid" for c in customers) == TICKETS
    # Every customer admitted (in Postgres) was told so over a socket.
    admitted = {
        str(c)
        for c in QueueEntry.objects.filter(
            event_id=event_id, admitted_at__isnull=False
        ).values_list("customer_id", flat=True)
    }
    told = {c.id for c in customers if c.told_admitted}
    assert admitted and admitted <= told, admitted - told
    # Both web and both socket processes served customers, and the killed
    # daphne's customers reopened their socket on the other one.
    assert {name for c in customers for name in c.sockets_opened} == {"ws-1", "ws-2"}
    assert any(c.sockets_opened[:2] == ["ws-1", "ws-2"] for c in customers)
    # The hot data lived where REDIS_CLUSTER_URL said: with a cluster, none
    # of the event's keys is on the layer's and broker's Redis.
    waiting = QueueEntry.objects.filter(event_id=event_id, status="WAITING").count()
    assert get_redis().zcard(queue_store().waiting_key(event_id)) == waiting > 0
    on_layer = get_layer_redis().keys(f"fq:{{{event_id}}}:*")
    assert (on_layer == []) == (fleet["backend"] == "cluster"), on_layer
