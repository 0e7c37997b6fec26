"""The sandbox gateway speaks Paystack's shapes (over HTTP, no Django)."""

import hashlib
import hmac
import json
import subprocess
import sys
import time

import pytest
import requests

from tests.support.stub_gateway import StubGateway


@pytest.fixture
def gw(sandbox):
    return sandbox


def auth(gw) -> dict[str, str]:
    return {"Authorization": f"Bearer {gw.app.secret_key}"}


def init(gw, **body):
    payload = {"email": "a@example.test", "amount": 5000, "reference": "ref-1", **body}
    return requests.post(
        f"{gw.url}/transaction/initialize", json=payload, headers=auth(gw), timeout=5
    )


def test_initialize_and_verify(gw):
    answer = init(gw, currency="NGN", callback_url="https://x.test/cb", metadata={"k": "v"})
    assert answer.status_code == 200
    body = answer.json()
    assert body["status"] is True
    assert body["message"] == "Authorization URL created"
    assert set(body["data"]) == {"authorization_url", "access_code", "reference"}
    assert body["data"]["reference"] == "ref-1"
    assert body["data"]["authorization_url"] == f"{gw.url}/checkout/{body['data']['access_code']}"

    verify = requests.get(f"{gw.url}/transaction/verify/ref-1", headers=auth(gw), timeout=5)
    assert verify.status_code == 200
    data = verify.json()["data"]
    assert (data["status"], data["amount"], data["currency"], data["reference"]) == (
        "abandoned",
        5000,
        "NGN",
        "ref-1",
    )
    assert data["metadata"] == {"k": "v"}


def test_duplicate_reference_is_refused(gw):
    assert init(gw).status_code == 200
    again = init(gw)
    assert again.status_code == 400
    assert again.json() == {"status": False, "message": "Duplicate Transaction Reference"}
    assert gw.stats()["initialize_created"] == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"email": "nope"}, "Invalid Email Address Passed"),
        ({"amount": 0}, "Invalid Amount Sent"),
        ({"amount": -5}, "Invalid Amount Sent"),
        ({"amount": "12.5"}, "Invalid Amount Sent"),
        ({"currency": "XXX"}, "Currency not supported by merchant"),
        ({"reference": "has space"}, "Invalid transaction reference"),
        ({"reference": "fq_underscore"}, "Invalid transaction reference"),  # not documented
    ],
)
def test_initialize_validates(gw, body, message):
    answer = init(gw, **body)
    assert answer.status_code == 400
    assert answer.json() == {"status": False, "message": message}


def test_api_needs_the_secret_key(gw):
    answer = requests.post(
        f"{gw.url}/transaction/initialize",
        json={"email": "a@b.c", "amount": 1},
        headers={"Authorization": "Bearer sk_wrong"},
        timeout=5,
    )
    assert answer.status_code == 401
    assert requests.get(f"{gw.url}/transaction/verify/x", timeout=5).status_code == 401


def test_verify_unknown_reference(gw):
    answer = requests.get(f"{gw.url}/transaction/verify/nope", headers=auth(gw), timeout=5)
    assert answer.status_code == 400
    assert answer.json()["message"] == "Transaction reference not found"


def test_webhooks_are_signed_with_the_secret_key(gw):
    stub = StubGateway().then(200, {"ok": True})
    try:
        gw.app.webhook_url = stub.url + "/hook"
        init(gw)
        result = gw.pay("ref-1")
        assert [w["result"] for w in result["webhooks"]] == [200]
        [delivery] = stub.requests
    finally:
        stub.stop()
    body = json.dumps(delivery["body"], separators=(",", ":")).encode()
    assert delivery["path"] == "/hook"
    expected = hmac.new(gw.app.secret_key.encode(), body, hashlib.sha512).hexdigest()
    assert delivery["headers"]["x-paystack-signature"] == expected
    assert delivery["body"]["event"] == "charge.success"
    assert delivery["body"]["data"]["status"] == "success"
    assert delivery["body"]["data"]["amount"] == 5000


def test_fault_injection_after_recording_loses_the_answer(gw):
    gw.config(fail_next_n_with_5xx=1, fail_after_recording=True)
    assert init(gw).status_code == 500
    assert gw.transaction("ref-1") is not None  # it exists anyway
    assert init(gw).json()["message"] == "Duplicate Transaction Reference"


def test_unknown_config_keys_are_refused(gw):
    answer = gw.control("POST", "config", json={"nope": 1})
    assert answer.status_code == 400


def test_unknown_checkout_is_404(gw):
    assert requests.get(f"{gw.url}/checkout/nope", timeout=5).status_code == 404


@pytest.mark.slow
def test_runs_as_a_module(unused_tcp_port):
    process = subprocess.Popen(  # noqa: S603 - our own module, fixed arguments
        [sys.executable, "-m", "devtools.sandbox", "--port", str(unused_tcp_port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                answer = requests.get(f"http://127.0.0.1:{unused_tcp_port}/", timeout=1)
                break
            except requests.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        assert answer.json() == {"status": True, "message": "FairQueue sandbox gateway"}
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def unused_tcp_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
