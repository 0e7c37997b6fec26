"""A small flash sale end to end, so CI guards the invariants the benchmark
checks (bench/flashsale.py runs the big one).

300 customers race for 100 tickets in two tiers through the real API
(Django test clients, several threads at once), the real sandbox gateway
over HTTP sending signed webhooks to a live server, and the real task
functions driven directly instead of waiting for beat. Some customers leave
the queue, let their admission lapse, let their claim expire or decline the
payment. Redis is wiped in the middle of the sale (on the Redis Cluster run:
the master serving the event's slot is killed, a round of the sale goes on
without it, and it comes back empty). At the end
``manage.py check_invariants --settled --sold-out`` (what the benchmark and
ops run) must pass.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from io import StringIO
from typing import Any

import pytest
import requests
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from claims.tasks import claims_expire
from console.invariants import Options, checks_to_run, status_counts
from console.invariants.agreement import redis_agrees
from console.invariants.base import Scope
from customers.models import Customer
from customers.tokens import customer_token_issue
from devtools.sandbox import SandboxServer
from events.models import Event
from events.services import TierSpec, default_sale_window, event_activate, event_create
from events.tasks import inventory_reconcile
from fairqueue.redis import get_redis
from payments.tasks import paying_claims_expire, payments_reconcile
from queueing.models import QueueEntry
from queueing.tasks import admission_tick, queue_reconcile
from tests.support.factories import OrganizerFactory
from tests.support.payments import CONTROL_TOKEN
from tests.support.redis_cluster import RedisClusterServer

CUSTOMERS = 300
TIERS = [TierSpec("Regular", 500_000, 60), TierSpec("VIP", 2_000_000, 40)]
INVENTORY = sum(t.inventory for t in TIERS)
BATCH = 40
WINDOW_SECONDS = 5
CLAIM_TTL_SECONDS = 4
THREADS = 8
MAX_ROUNDS = 60


def behaviour(index: int) -> str:
    """What customer ``index`` does, fixed so a failure can be replayed."""
    if index % 25 == 3:
        return "abandon_queue"
    if index % 20 == 0:
        return "lapse_admission"
    if index % 10 == 1:
        return "expire_claim"
    if index % 10 == 2:
        return "decline"
    return "pay"


@pytest.fixture
def sandbox(live_server, settings) -> Iterator[SandboxServer]:
    """The sandbox gateway on a free port, its webhooks going to the live
    server, the app pointed at it."""
    server = SandboxServer(
        port=0,
        secret_key=settings.PAYSTACK_SECRET_KEY,
        webhook_url=f"{live_server.url}/api/v1/webhooks/paystack/",
        control_token=CONTROL_TOKEN,
    ).start()
    settings.PAYSTACK_BASE_URL = server.url
    settings.PAYSTACK_TIMEOUT_SECONDS = 5.0
    settings.PAYSTACK_RETRY_BASE_SECONDS = 0.01
    settings.CLAIM_TTL_SECONDS = CLAIM_TTL_SECONDS
    yield server
    server.stop()


class Shopper:
    """One customer's side of the API (a test client per call: thread-safe)."""

    def __init__(self, index: int, customer: Customer, event_id: str, tier_ids: list[str]):
        self.index, self.customer, self.event_id = index, customer, event_id
        token, _ = customer_token_issue(customer_id=customer.id, email=customer.email)
        self.auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
        # Half prefer each tier; the other is the fallback when one sells out.
        self.tiers = tier_ids if index % 2 else list(reversed(tier_ids))
        self.behaviour = behaviour(index)
        self.done = False

    def call(self, method: str, path: str, body: Any = None, **headers: str) -> tuple[int, Any]:
        client = APIClient()
        response = getattr(client, method)(path, body, format="json", **self.auth, **headers)
        try:
            payload = response.json() if response.content else None
        except ValueError:
            payload = response.content
        connection.close()
        return response.status_code, payload

    def join(self) -> int:
        status, _ = self.call("post", f"/api/v1/events/{self.event_id}/queue/")
        return status

    def leave(self) -> int:
        status, _ = self.call("delete", f"/api/v1/events/{self.event_id}/queue/")
        self.done = True
        return status

    def take_turn(self, sandbox_url: str) -> str:
        """Admitted: learn the token from the position endpoint, then claim
        and pay as this customer's behaviour says."""
        self.done = True
        status, body = self.call("get", f"/api/v1/events/{self.event_id}/queue/position/")
        assert status == 200, body
        if body["status"] != "ADMITTED":
            return f"not_admitted:{body['status']}"
        if self.behaviour == "lapse_admission":
            return "lapsed"
        claim = None
        for tier_id in self.tiers:
            for _ in range(50):  # 503 busy: tickets held by claims in flight; retry
                status, claim = self.call(
                    "post",
                    f"/api/v1/events/{self.event_id}/claims/",
                    {"admission_token": body["admission_token"], "tier_id": tier_id, "quantity": 1},
                    HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
                )
                if status != 503:
                    break
                time.sleep(0.05)
            if status == 201:
                break
            assert status in (409, 410, 403), claim  # sold out / expired, never a 500
            if claim["error"]["code"] != "sold_out":
                return f"claim:{claim['error']['code']}"
        else:
            return "claim:sold_out"
        if self.behaviour == "expire_claim":
            return "claim_left_to_expire"
        status, payment = self.call(
            "post",
            f"/api/v1/claims/{claim['claim_id']}/payments/",
            {},
            HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        )
        assert status == 201, payment
        outcome = "failed" if self.behaviour == "decline" else "success"
        answer = requests.post(
            f"{sandbox_url}/_sandbox/pay/{payment['reference']}",
            json={"outcome": outcome, "wait": True},
            headers={"X-Sandbox-Token": CONTROL_TOKEN},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        assert all(w["result"] == 200 for w in answer.json()["data"]["webhooks"])
        if outcome == "failed":
            # No webhook for a decline: the customer's return to the callback
            # page finds it (verify), as with Paystack.
            page = Client().get("/payments/return/", {"reference": payment["reference"]})
            connection.close()
            assert page.status_code == 200
        status, after = self.call("get", f"/api/v1/claims/{claim['claim_id']}/")
        return f"paid:{after['status']}" if outcome == "success" else f"declined:{after['status']}"


def upkeep() -> None:
    """What beat would run between ticks."""
    claims_expire()
    paying_claims_expire()
    payments_reconcile()
    inventory_reconcile()
    queue_reconcile()


def sold(event_id: str) -> int:
    return status_counts(event_id=event_id)["claims"].get("CONFIRMED", 0)  # one ticket each


def check_invariants(*args: str) -> dict:
    """``manage.py check_invariants --json ...``: its report, passed or not."""
    out = StringIO()
    with contextlib.suppress(CommandError):  # a failure is in the report
        call_command("check_invariants", "--json", *args, stdout=out)
    return json.loads(out.getvalue())


def waiting_order_matches(event_id: str) -> bool:
    """The Redis waiting set holds exactly the WAITING rows, in Postgres' order."""
    in_postgres = [
        str(c)
        for c in QueueEntry.objects.filter(event_id=event_id, status="WAITING")
        .order_by("score", "customer_id")
        .values_list("customer_id", flat=True)
    ]
    in_redis = get_redis().zrange(f"fq:{{{event_id}}}:queue:waiting", 0, -1)
    return in_redis == in_postgres


def lose_redis(request: pytest.FixtureRequest, event_id: str, meanwhile: Any) -> None:
    """The event's Redis data is lost mid-sale. One Redis: FLUSHDB (only this
    test's database of the server; the app keeps nothing in the others). On
    the cluster: the master of the event's slot is killed, ``meanwhile()``
    runs without it, and it starts again empty (its slots, no keys)."""
    if request.getfixturevalue("redis_backend") != "cluster":
        get_redis().flushdb()
        return
    cluster: RedisClusterServer = request.getfixturevalue("redis_cluster")
    owner = cluster.node_of(f"fq:{{{event_id}}}:queue:waiting")
    owner.kill()
    meanwhile()
    owner.start()
    cluster.wait_ok()


@pytest.mark.django_db(transaction=True)
def test_small_flash_sale_with_redis_wipe_keeps_every_invariant(sandbox, request):
    start, end = default_sale_window()
    event = event_create(
        organizer=OrganizerFactory(),
        name="Small flash sale",
        sale_start=start,
        sale_end=end,
        tiers=TIERS,
        admission_batch_size=BATCH,
        admission_window_seconds=WINDOW_SECONDS,
    )
    event_activate(event_id=event.pk)
    event_id = str(event.pk)
    tier_ids = [str(t) for t in event.tiers.order_by("name").values_list("id", flat=True)]
    customers = Customer.objects.bulk_create(
        [Customer(email=f"flash{i}@example.test") for i in range(CUSTOMERS)]
    )
    shoppers = [Shopper(i, c, event_id, tier_ids) for i, c in enumerate(customers)]
    outcomes: Counter = Counter()

    with ThreadPoolExecutor(THREADS) as pool:
        joined = Counter(pool.map(Shopper.join, shoppers))
        assert joined == {201: CUSTOMERS}
        leavers = [s for s in shoppers if s.behaviour == "abandon_queue"]
        assert Counter(pool.map(Shopper.leave, leavers)) == {204: len(leavers)}
        by_customer = {str(s.customer.id): s for s in shoppers}

        def sale_round() -> None:
            """A tick, then every admitted shopper still shopping takes a turn."""
            admission_tick()
            admitted = QueueEntry.objects.filter(event_id=event_id, status="ADMITTED")
            turn = [
                by_customer[str(c)]
                for c in admitted.values_list("customer_id", flat=True)
                if not by_customer[str(c)].done
            ]
            outcomes.update(pool.map(lambda s: s.take_turn(sandbox.url), turn))

        wiped_at_round = None
        for round_number in range(MAX_ROUNDS):
            sale_round()
            if wiped_at_round is None and sold(event_id) >= INVENTORY // 3:
                # One round of the sale with the event's Redis gone.
                lose_redis(request, event_id, sale_round)
                wiped_at_round = round_number
                # The sale goes on against the empty Redis: joins of latecomers
                # are answered from Postgres, the next tick admits from Postgres.
                admission_tick()
                queue_reconcile()
                inventory_reconcile()
                assert waiting_order_matches(event_id)
                rebuilt = redis_agrees(Event.objects.get(pk=event_id), Options(timezone.now()))
                assert rebuilt.ok, rebuilt.detail
            if sold(event_id) == INVENTORY:
                break
            time.sleep(1.0)  # windows and claim TTLs lapse in real time
            upkeep()

    assert wiped_at_round is not None
    assert sold(event_id) == INVENTORY, outcomes
    # Settle: lapsed admissions expire, reconciliation catches up.
    time.sleep(WINDOW_SECONDS + 1)
    admission_tick()
    upkeep()
    report = check_invariants("--event", event_id, "--settled", "--sold-out")
    [checked] = report["events"]
    failed = [f"{c['check']}: {c['detail']}" for c in checked["checks"] if not c["ok"]]
    assert report["ok"], "\n".join(failed)
    every = [c for c in checks_to_run(settled=True, sold_out=True) if c.scope == Scope.EVENT]
    assert len(checked["checks"]) == len(every) > 0  # every check: always, settled and sold out
    counts = checked["counts"]
    assert counts["claims"]["CONFIRMED"] == INVENTORY
    assert counts["payments"]["CONFIRMED"] == INVENTORY
    assert "ADMITTED" not in counts["queue"]
    # The misbehaving customers really did misbehave, and cost nobody a ticket.
    assert outcomes["claim_left_to_expire"] >= 1
    assert outcomes["lapsed"] >= 1
    # A declined card keeps its hold (the buyer may try again) until the claim
    # expires: none was given back at the decline, all of them by the settle.
    assert counts["payments"]["FAILED"] == outcomes["declined:CLAIMED"] >= 1
    assert "declined:RELEASED" not in outcomes
    declined_and_expired = outcomes["claim_left_to_expire"] + outcomes["declined:CLAIMED"]
    assert counts["claims"]["RELEASED"] >= declined_and_expired
    assert counts["queue"]["ABANDONED"] == len(leavers)
    assert outcomes["paid:CONFIRMED"] == INVENTORY
