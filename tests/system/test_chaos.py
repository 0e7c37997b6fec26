"""Chaos: customers claim, release, pay and decline through the API while the
beat's work (admission ticks, claim expiry, payment expiry and
reconciliation, inventory and queue reconciliation, the end of sales) runs
alongside, and Redis is flushed, then stopped (a real redis-server, killed)
and started again empty, then flushed once more. When it is over,
``manage.py check_invariants --settled`` must find nothing wrong.

Small numbers (60 customers, 24 tickets in two tiers, 4 s windows, 3 s claim
TTL) so it runs in well under a minute; what is large is the number of
overlaps between the parties."""

from __future__ import annotations

import contextlib
import json
import queue
import random
import threading
import time
from collections import Counter
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from claims import tasks as claims_tasks
from claims.models import Claim
from customers.models import Customer
from events import tasks as events_tasks
from events.models import Event
from events.services import (
    TierSpec,
    default_sale_window,
    event_activate,
    event_create,
    event_pause,
)
from fairqueue.redis import get_redis
from payments import tasks as payments_tasks
from payments.models import Payment
from queueing import tasks as queueing_tasks
from queueing.models import QueueEntry
from tests.support.factories import OrganizerFactory, bearer
from tests.support.payments import WEBHOOK_PATH

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

CUSTOMERS = 60
TIERS = [TierSpec("Regular", 500_000, 16), TierSpec("VIP", 2_000_000, 8)]
WINDOW_SECONDS = 4
CLAIM_TTL_SECONDS = 3
CUSTOMER_THREADS = 6
OUTAGE_SECONDS = 3.0
CHAOS_DEADLINE_SECONDS = 120.0


def upkeep() -> None:
    """One round of what beat runs (each task single-flight, as in production)."""
    queueing_tasks.admission_tick()
    claims_tasks.claims_expire()
    payments_tasks.paying_claims_expire()
    payments_tasks.payments_reconcile()
    events_tasks.inventory_reconcile()
    queueing_tasks.queue_reconcile()
    events_tasks.sales_end()


class Shopper:
    def __init__(self, customer: Customer, event_id: str, tier_ids: list[str], rng: random.Random):
        self.customer, self.event_id, self.tier_ids = customer, event_id, tier_ids
        self.auth = bearer(customer)
        self.behaviour = rng.choice(["pay", "pay", "pay", "decline", "release", "expire", "lapse"])
        self.tiers = rng.sample(tier_ids, len(tier_ids))

    def call(self, method: str, path: str, body: Any = None, **headers: str) -> tuple[int, Any]:
        response = getattr(APIClient(), method)(path, body, format="json", **self.auth, **headers)
        payload = response.json() if response.content else None
        return response.status_code, payload

    def turn(self, sandbox: Any) -> str:
        """One look at the queue; when admitted, the whole purchase. Returns
        what happened, or "" to be looked at again later."""
        status, body = self.call("get", f"/api/v1/events/{self.event_id}/queue/position/")
        assert status == 200, body
        if body["status"] == "WAITING":
            return ""
        if body["status"] != "ADMITTED":
            return f"left:{body['status']}"
        if self.behaviour == "lapse":
            return "lapsed"
        claim = self._claim(body["admission_token"])
        if isinstance(claim, str):
            return claim
        if self.behaviour == "expire":
            return "claim_left_to_expire"
        if self.behaviour == "release":
            status, _ = self.call("delete", f"/api/v1/claims/{claim['claim_id']}/")
            assert status in (204, 409), status  # 409: it expired first
            return f"released:{status}"
        return self._pay(claim, sandbox)

    def _claim(self, token: str) -> dict | str:
        for tier_id in self.tiers:
            for _ in range(50):  # busy: rows held by claims in flight, retry
                status, body = self.call(
                    "post",
                    f"/api/v1/events/{self.event_id}/claims/",
                    {"admission_token": token, "tier_id": tier_id, "quantity": 1},
                )
                if status != 503:
                    break
                time.sleep(0.05)
            if status == 201:
                return body
            assert status in (403, 409, 410), body  # never a 500
            if body["error"]["code"] != "sold_out":
                return f"claim:{body['error']['code']}"
        return "claim:sold_out"

    def _pay(self, claim: dict, sandbox: Any) -> str:
        status, payment = self.call("post", f"/api/v1/claims/{claim['claim_id']}/payments/", {})
        if status != 201:
            return f"payment:{status}"  # e.g. the claim expired meanwhile
        outcome = "failed" if self.behaviour == "decline" else "success"
        sandbox.pay(payment["reference"], outcome=outcome, send_webhook=False)
        body, signature = sandbox.webhook(payment["reference"])
        answer = APIClient().generic(
            "POST",
            WEBHOOK_PATH,
            data=body,
            content_type="application/json",
            HTTP_X_PAYSTACK_SIGNATURE=signature,
        )
        # 503: busy on a lock; the gateway delivers again (reconciliation verifies).
        assert answer.status_code in (200, 503), answer.content
        return f"{outcome}:{answer.status_code}"


def check_invariants(*args: str) -> dict:
    out = StringIO()
    with contextlib.suppress(CommandError):  # a failure is in the report
        call_command("check_invariants", "--json", *args, stdout=out)
    return json.loads(out.getvalue())


def test_chaos_ends_with_every_invariant_holding(own_redis, sandbox, settings):
    settings.CLAIM_TTL_SECONDS = CLAIM_TTL_SECONDS
    settings.PAYMENT_STALE_SECONDS = 1
    settings.ADMISSION_INTERVAL_SECONDS = 1
    start, end = default_sale_window()
    event = event_create(
        organizer=OrganizerFactory(),
        name="Chaos sale",
        sale_start=start,
        sale_end=end,
        tiers=TIERS,
        admission_batch_size=8,
        admission_window_seconds=WINDOW_SECONDS,
    )
    event_activate(event_id=event.pk)
    event_id = str(event.pk)
    tier_ids = [str(t) for t in event.tiers.values_list("id", flat=True)]
    rng = random.Random(11)
    customers = Customer.objects.bulk_create(
        [Customer(email=f"chaos{i}@example.test") for i in range(CUSTOMERS)]
    )
    shoppers = [Shopper(c, event_id, tier_ids, rng) for c in customers]
    for shopper in shoppers:
        status, _ = shopper.call("post", f"/api/v1/events/{event_id}/queue/")
        assert status == 201

    stop = threading.Event()
    outcomes: Counter = Counter()
    errors: list[BaseException] = []
    todo: queue.SimpleQueue[Shopper] = queue.SimpleQueue()
    for shopper in shoppers:
        todo.put(shopper)

    def shop() -> None:
        try:
            while not stop.is_set():
                try:
                    shopper = todo.get(timeout=0.2)
                except queue.Empty:
                    return
                outcome = shopper.turn(sandbox)
                if outcome:
                    outcomes[outcome] += 1
                else:
                    todo.put(shopper)
                    time.sleep(0.05)
        except BaseException as exc:  # handed to the test
            errors.append(exc)
        finally:
            connection.close()

    def beat() -> None:
        try:
            while not stop.is_set():
                upkeep()
                time.sleep(0.2)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    def claims_made() -> int:
        return Claim.objects.filter(event_id=event_id).count()

    threads = [threading.Thread(target=shop) for _ in range(CUSTOMER_THREADS)]
    threads.append(threading.Thread(target=beat))
    for thread in threads:
        thread.start()
    chaos: dict[str, Any] = {}
    deadline = time.monotonic() + CHAOS_DEADLINE_SECONDS
    try:
        # The chaos, at fixed points of the sale's progress.
        while claims_made() < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        get_redis().flushdb()
        chaos["flushed"] = claims_made()
        while claims_made() < 9 and time.monotonic() < deadline:
            time.sleep(0.05)
        chaos["down_at"] = timezone.now()
        own_redis.stop()
        time.sleep(OUTAGE_SECONDS)
        own_redis.start()
        chaos["up_at"] = timezone.now()
        while claims_made() < 14 and time.monotonic() < deadline:
            time.sleep(0.05)
        get_redis().flushdb()
        chaos["flushed_again"] = claims_made()
        time.sleep(8)  # the sale goes on a while after the last blow
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)

    # Settle: no new admissions (a SOLD_OUT event that gets a ticket back is
    # ACTIVE again, and paused then), every window and claim runs out, beat
    # catches up.
    quiet_by = time.monotonic() + 60
    while time.monotonic() < quiet_by:
        if Event.objects.get(pk=event_id).status == "ACTIVE":
            event_pause(event_id=event_id)
        upkeep()
        busy = (
            Claim.objects.filter(event_id=event_id, status="CLAIMED").exists()
            or QueueEntry.objects.filter(event_id=event_id, status="ADMITTED").exists()
            or Payment.objects.filter(
                claim__event_id=event_id, status__in=["INITIALIZING", "PENDING"]
            ).exists()
        )
        if not busy:
            break
        time.sleep(1)
    upkeep()  # one more pass: Redis agrees with the final state
    report = check_invariants("--event", event_id, "--settled")
    [checked] = report["events"]
    failed = [f"{c['check']}: {c['detail']}" for c in checked["checks"] if not c["ok"]]
    assert report["ok"], "\n".join(failed) + f"\noutcomes {dict(outcomes)} chaos {chaos}"
    # The chaos really happened in the middle of the sale, and the sale went on
    # through the outage on Postgres alone.
    assert set(chaos) == {"flushed", "down_at", "up_at", "flushed_again"}, chaos
    during = Claim.objects.filter(
        event_id=event_id, created_at__gte=chaos["down_at"], created_at__lte=chaos["up_at"]
    ).count()
    assert during >= 1, (chaos, dict(outcomes))
    assert outcomes["success:200"] >= 1
    assert sum(n for outcome, n in outcomes.items() if outcome.startswith("released")) >= 1
