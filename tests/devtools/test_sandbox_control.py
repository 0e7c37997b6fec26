"""The sandbox's control API (token), the statuses it produces on demand, its
Refund API, its refund and dispute webhooks, and its retries of failed
webhook deliveries on Paystack's backoff (compressed)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from devtools.devstack.services import Stack
from devtools.devstack.system import banner, point_at_each_other
from devtools.sandbox import SandboxServer
from devtools.sandbox.webhooks import RETRY_SCHEDULE
from tests.support.payments import RETRY_SCALE
from tests.support.stub_gateway import StubGateway


@pytest.fixture
def hook(sandbox):
    """The sandbox's webhooks go to a scripted receiver."""
    stub = StubGateway()
    sandbox.app.webhook_url = stub.url + "/hook"
    yield stub
    stub.stop()


def auth(gw) -> dict[str, str]:
    return {"Authorization": f"Bearer {gw.app.secret_key}"}


def initialize(gw, reference: str = "ref-1", amount: int = 5000) -> None:
    answer = requests.post(
        f"{gw.url}/transaction/initialize",
        json={"email": "a@example.test", "amount": amount, "reference": reference},
        headers=auth(gw),
        timeout=5,
    )
    assert answer.status_code == 200, answer.text


def verify(gw, reference: str = "ref-1") -> dict:
    return requests.get(
        f"{gw.url}/transaction/verify/{reference}", headers=auth(gw), timeout=5
    ).json()["data"]


def wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


# --- the control token -------------------------------------------------------------


@pytest.mark.parametrize("headers", [{}, {"X-Sandbox-Token": "wrong"}])
def test_control_api_needs_the_token(sandbox, headers):
    initialize(sandbox)
    for method, path in [
        ("POST", "pay/ref-1"),
        ("GET", "config"),
        ("POST", "config"),
        ("GET", "transactions/ref-1"),
        ("POST", "reset"),
        ("POST", "disputes/ref-1"),
    ]:
        answer = requests.request(
            method, f"{sandbox.url}/_sandbox/{path}", json={}, headers=headers, timeout=5
        )
        assert answer.status_code == 401, (method, path)
    assert verify(sandbox)["status"] == "abandoned"  # nobody marked it paid
    assert sandbox.transaction("ref-1") is not None  # and nothing was reset


def test_without_a_configured_token_the_control_api_is_off():
    server = SandboxServer(port=0, secret_key="sk_test_x", control_token="").start()
    try:
        for token in ("", "anything"):
            answer = requests.post(
                f"{server.url}/_sandbox/config",
                json={"reject_key": True},
                headers={"X-Sandbox-Token": token},
                timeout=5,
            )
            assert answer.status_code == 403
        assert server.app.config["reject_key"] is False
    finally:
        server.stop()


# --- statuses on demand --------------------------------------------------------------


@pytest.mark.parametrize(
    "status",
    ["success", "failed", "abandoned", "ongoing", "pending", "processing", "queued", "reversed"],
)
def test_every_documented_status_on_demand_and_only_success_sends_a_webhook(sandbox, hook, status):
    hook.then(200, {})
    initialize(sandbox)

    result = sandbox.pay("ref-1", outcome=status)

    assert result["status"] == status
    assert verify(sandbox)["status"] == status
    if status == "success":
        assert [w["event"] for w in result["webhooks"]] == ["charge.success"]
        assert len(hook.requests) == 1
    else:
        assert result["webhooks"] == []
        assert hook.requests == []


def test_a_decline_on_the_checkout_page_sends_no_webhook(sandbox, hook):
    initialize(sandbox)
    tx = sandbox.transaction("ref-1")
    answer = requests.post(
        f"{sandbox.url}/checkout/{tx['access_code']}/decline", allow_redirects=False, timeout=5
    )
    assert answer.status_code == 200  # no callback_url: the page again
    assert verify(sandbox)["status"] == "failed"
    time.sleep(0.2)
    assert hook.requests == []


@pytest.mark.parametrize(
    ("fault", "status", "message"),
    [({"reject_key": True}, 401, "Invalid key"), ({"rate_limit_next_n": 1}, 429, None)],
)
def test_merchant_faults_on_demand(sandbox, fault, status, message):
    sandbox.config(**fault, rate_limit_retry_after=7)
    answer = requests.get(f"{sandbox.url}/transaction/verify/x", headers=auth(sandbox), timeout=5)
    assert answer.status_code == status
    if status == 429:
        assert answer.headers["Retry-After"] == "7"
    else:
        assert answer.json() == {"status": False, "message": message}


def test_a_steady_gateway_latency_on_every_api_call_and_calls_wait_side_by_side(sandbox):
    """The round trip to Paystack that a sale's web workers wait out; the
    sandbox answers concurrent calls concurrently, as the gateway would."""
    sandbox.config(latency_seconds=0.3)
    started = time.monotonic()
    initialize(sandbox, "slow-1")
    assert time.monotonic() - started >= 0.3
    with ThreadPoolExecutor(max_workers=4) as pool:
        started = time.monotonic()
        list(pool.map(lambda n: initialize(sandbox, f"slow-{n + 2}"), range(4)))
    assert 0.3 <= time.monotonic() - started < 1.0
    sandbox.config(latency_seconds=0.0)
    started = time.monotonic()
    verify(sandbox, "slow-1")
    assert time.monotonic() - started < 0.3


# --- the Refund API ---------------------------------------------------------------


def refund(gw, **body):
    return requests.post(f"{gw.url}/refund", json=body, headers=auth(gw), timeout=5)


def test_refund_api_full_and_partial(sandbox, hook):
    for _ in range(4):
        hook.then(200, {})
    sandbox.config(refund_outcome="manual")
    initialize(sandbox, amount=10_000)
    sandbox.pay("ref-1", send_webhook=False)

    partial = refund(sandbox, transaction="ref-1", amount=4_000, merchant_note="half")
    assert partial.status_code == 200
    body = partial.json()
    assert (body["status"], body["message"]) == (True, "Refund has been queued for processing")
    data = body["data"]
    assert (data["status"], data["amount"], data["transaction"]["reference"]) == (
        "pending",
        4_000,
        "ref-1",
    )
    too_much = refund(sandbox, transaction="ref-1", amount=6_001)
    assert too_much.status_code == 400
    rest = refund(sandbox, transaction=str(sandbox.transaction("ref-1")["id"]))  # by id
    assert rest.json()["data"]["amount"] == 6_000
    assert refund(sandbox, transaction="ref-1").json()["message"] == (
        "Transaction has been fully reversed"
    )

    fetched = requests.get(f"{sandbox.url}/refund/{data['id']}", headers=auth(sandbox), timeout=5)
    assert fetched.json()["data"]["amount"] == 4_000
    listed = requests.get(
        f"{sandbox.url}/refund", params={"reference": "ref-1"}, headers=auth(sandbox), timeout=5
    ).json()
    assert [r["amount"] for r in listed["data"]] == [4_000, 6_000]
    assert listed["meta"]["total"] == 2

    sandbox.settle_refund(str(data["id"]), "processed")
    sandbox.settle_refund(str(rest.json()["data"]["id"]), "processed")
    assert verify(sandbox)["status"] == "reversed"  # refunded in full
    wait_for(lambda: len(hook.requests) == 4)
    events = sorted(r["body"]["event"] for r in hook.requests)
    assert events == ["refund.pending", "refund.pending", "refund.processed", "refund.processed"]
    processed = next(r["body"]["data"] for r in hook.requests if r["body"]["event"].endswith("ed"))
    assert processed["transaction_reference"] == "ref-1"
    assert processed["status"] == "processed"


def test_refund_of_an_unpaid_transaction_is_refused(sandbox):
    initialize(sandbox)
    assert refund(sandbox, transaction="ref-1").status_code == 400
    assert refund(sandbox, transaction="nope").status_code == 404
    assert requests.post(f"{sandbox.url}/refund", json={}, timeout=5).status_code == 401


def test_refunds_settle_by_themselves_unless_manual(sandbox, hook):
    hook.then(200, {}).then(200, {})
    sandbox.config(refund_outcome="failed", refund_delay_seconds=0.05)
    initialize(sandbox)
    sandbox.pay("ref-1", send_webhook=False)
    refund(sandbox, transaction="ref-1")
    wait_for(lambda: len(hook.requests) == 2)
    assert [r["body"]["event"] for r in hook.requests] == ["refund.pending", "refund.failed"]
    assert verify(sandbox)["status"] == "success"  # nothing went back


# --- disputes -----------------------------------------------------------------------


def test_dispute_webhooks(sandbox, hook):
    for _ in range(3):
        hook.then(200, {})
    initialize(sandbox)
    sandbox.pay("ref-1", send_webhook=False)

    for event in ("create", "remind"):
        assert sandbox.dispute("ref-1", event=event)["webhooks"] == [200]
    resolved = sandbox.dispute("ref-1", event="resolve", resolution="merchant-accepted")

    assert resolved["webhooks"] == [200]
    bodies = [r["body"] for r in hook.requests]
    assert [b["event"] for b in bodies] == [
        "charge.dispute.create",
        "charge.dispute.remind",
        "charge.dispute.resolve",
    ]
    assert {b["data"]["id"] for b in bodies} == {resolved["dispute_id"]}
    assert bodies[0]["data"]["transaction"]["reference"] == "ref-1"
    assert (bodies[2]["data"]["status"], bodies[2]["data"]["resolution"]) == (
        "resolved",
        "merchant-accepted",
    )
    assert verify(sandbox)["status"] == "reversed"


# --- retries ----------------------------------------------------------------------


def test_a_failed_delivery_is_retried_on_the_backoff(sandbox, hook):
    hook.then(500, {}).then(503, {}).then(200, {})
    initialize(sandbox)

    first = sandbox.pay("ref-1")  # waits for the first attempt only

    assert [w["result"] for w in first["webhooks"]] == [500]
    wait_for(lambda: len(sandbox.transaction("ref-1")["webhooks"]) == 3)
    attempts = sandbox.transaction("ref-1")["webhooks"]
    assert [(a["attempt"], a["result"]) for a in attempts] == [(1, 500), (2, 503), (3, 200)]
    assert len(hook.requests) == 3
    assert len({r["headers"]["x-paystack-signature"] for r in hook.requests}) == 1  # same body
    time.sleep(3 * RETRY_SCHEDULE[0] * RETRY_SCALE)
    assert len(hook.requests) == 3  # delivered: no more retries


def test_retries_follow_paystacks_schedule():
    assert RETRY_SCHEDULE[:4] == (180.0,) * 4  # every 3 minutes for the first 4 tries
    assert set(RETRY_SCHEDULE[4:]) == {3600.0}  # then hourly...
    assert sum(RETRY_SCHEDULE) / 3600 == pytest.approx(72.2, abs=0.01)  # ...for 72 hours


def test_retries_can_be_switched_off_and_stop_on_reset(sandbox, hook):
    for _ in range(5):
        hook.then(500, {})
    sandbox.config(webhook_retries=False)
    initialize(sandbox)
    sandbox.pay("ref-1")
    time.sleep(4 * RETRY_SCHEDULE[0] * RETRY_SCALE)
    assert len(hook.requests) == 1

    scale = 0.005  # the first retry 0.9 s after the first attempt: time to reset first
    sandbox.config(webhook_retries=True, webhook_retry_scale=scale)
    initialize(sandbox, reference="ref-2")
    sandbox.pay("ref-2")
    sandbox.control("POST", "reset")
    time.sleep(2 * RETRY_SCHEDULE[0] * scale)
    assert len(hook.requests) == 2  # the retry of ref-2 was forgotten with the reset


def test_make_run_gives_the_sandbox_a_fresh_control_token_and_shows_it():
    ports = {"PORT": "8000", "WS_PORT": "8001", "SANDBOX_PORT": "8002"}
    services = {"DATABASE_URL": "postgres://x@127.0.0.1:1/db", "REDIS_URL": "redis://x:2/0"}
    env = dict(ports)
    point_at_each_other(env, with_sandbox=True)
    token = env["SANDBOX_CONTROL_TOKEN"]
    assert len(token) >= 32
    text = banner({**env, **services}, Stack(), {})
    assert f"/_sandbox/  header X-Sandbox-Token: {token}" in text
    other = dict(ports)
    point_at_each_other(other, with_sandbox=True)
    assert other["SANDBOX_CONTROL_TOKEN"] != token  # one per run
    given = {**ports, "SANDBOX_CONTROL_TOKEN": "mine"}
    point_at_each_other(given, with_sandbox=True)
    assert given["SANDBOX_CONTROL_TOKEN"] == "mine"
    without = dict(ports)
    point_at_each_other(without, with_sandbox=False)
    assert "SANDBOX_CONTROL_TOKEN" not in without
    assert "sandbox control" not in banner({**without, **services}, Stack(), {})


@pytest.mark.slow
def test_the_sandbox_process_takes_its_token_from_the_environment():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "SANDBOX_CONTROL_TOKEN": "from-the-environment"}
    process = subprocess.Popen(  # noqa: S603 - our own module, fixed arguments
        [sys.executable, "-m", "devtools.sandbox", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/_sandbox/stats"
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                refused = requests.get(url, timeout=1)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        allowed = requests.get(url, headers={"X-Sandbox-Token": "from-the-environment"}, timeout=2)
        assert (refused.status_code, allowed.status_code) == (401, 200)
    finally:
        process.terminate()
        process.wait(timeout=10)
