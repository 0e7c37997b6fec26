"""The Paystack client over real HTTP (a scripted stub server, and the sandbox):
retries for transient failures only, bounded, typed errors, secret never logged."""

import logging
import time

import pytest

from payments.paystack import (
    GatewayPermanentError,
    GatewayTransientError,
    PaystackClient,
    sign,
    signature_valid,
)
from tests.support.stub_gateway import StubGateway

SECRET = "sk_test_client_secret_value"
INIT_OK = {
    "status": True,
    "message": "Authorization URL created",
    "data": {"authorization_url": "https://pay.test/abc", "access_code": "abc", "reference": "r1"},
}
INIT_ARGS = {
    "email": "a@example.test",
    "amount": 500_000,
    "currency": "NGN",
    "reference": "r1",
    "callback_url": "https://app.test/payments/return/",
    "metadata": {"claim_id": "c", "event_id": "e"},
}


@pytest.fixture
def stub():
    server = StubGateway()
    yield server
    server.stop()


def client(url: str, **kwargs) -> PaystackClient:
    defaults = {"secret_key": SECRET, "timeout": 1.0, "max_attempts": 3, "backoff_base": 0.01}
    return PaystackClient(base_url=url, **{**defaults, **kwargs})


def test_initialize_sends_the_paystack_request(stub):
    stub.then(200, INIT_OK)
    answer = client(stub.url).initialize(**INIT_ARGS)
    assert answer.authorization_url == "https://pay.test/abc"
    assert answer.access_code == "abc"
    assert answer.reference == "r1"
    [request] = stub.requests
    assert request["method"] == "POST"
    assert request["path"] == "/transaction/initialize"
    assert request["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert request["body"] == INIT_ARGS


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_transient_status_is_retried_then_succeeds(stub, status):
    stub.then(status, {"status": False, "message": "busy"}).then(status, b"<html>").then(
        200, INIT_OK
    )
    answer = client(stub.url).initialize(**INIT_ARGS)
    assert answer.access_code == "abc"
    assert len(stub.requests) == 3
    # The same request each time (same reference: the gateway deduplicates).
    assert {r["body"]["reference"] for r in stub.requests} == {"r1"}


def test_transient_failures_are_bounded(stub):
    for _ in range(10):
        stub.then(503, {"status": False, "message": "down"})
    with pytest.raises(GatewayTransientError) as info:
        client(stub.url, max_attempts=4).initialize(**INIT_ARGS)
    assert info.value.status_code == 503
    assert len(stub.requests) == 4


def test_timeout_is_transient_and_retried(stub):
    stub.then(200, INIT_OK, delay=1.0).then(200, INIT_OK)
    started = time.monotonic()
    answer = client(stub.url, timeout=0.3).initialize(**INIT_ARGS)
    assert answer.access_code == "abc"
    assert len(stub.requests) == 2
    assert time.monotonic() - started < 1.5


def test_whole_call_stays_within_its_deadline(stub):
    for _ in range(10):
        stub.then(200, INIT_OK, delay=2.0)
    started = time.monotonic()
    with pytest.raises(GatewayTransientError):
        client(stub.url, timeout=0.5, max_attempts=10, deadline=1.2).initialize(**INIT_ARGS)
    assert time.monotonic() - started < 2.0
    assert len(stub.requests) <= 3


def test_connection_refused_is_transient():
    # Port 9 (discard) is closed on loopback: connection refused.
    with pytest.raises(GatewayTransientError):
        client("http://127.0.0.1:9", max_attempts=2).verify(reference="r1")


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, {"status": False, "message": "Invalid Amount Sent"}),
        (401, {"status": False, "message": "Invalid key"}),
        (404, {"status": False, "message": "Not found"}),
        (200, {"status": False, "message": "Something refused"}),
        (200, b"not json"),
        (200, {"status": True, "message": "no data"}),
    ],
)
def test_permanent_answers_are_not_retried(stub, status, body):
    stub.then(status, body).then(200, INIT_OK)
    with pytest.raises(GatewayPermanentError):
        client(stub.url).initialize(**INIT_ARGS)
    assert len(stub.requests) == 1  # the second (good) answer was never asked for


def test_duplicate_reference_and_not_found_are_recognised(stub):
    stub.then(400, {"status": False, "message": "Duplicate Transaction Reference"})
    stub.then(400, {"status": False, "message": "Transaction reference not found"})
    with pytest.raises(GatewayPermanentError) as dup:
        client(stub.url).initialize(**INIT_ARGS)
    with pytest.raises(GatewayPermanentError) as missing:
        client(stub.url).verify(reference="nope")
    assert dup.value.duplicate_reference and not dup.value.reference_not_found
    assert missing.value.reference_not_found and not missing.value.duplicate_reference


def test_verify_reads_the_answer(stub):
    stub.then(
        200,
        {
            "status": True,
            "message": "Verification successful",
            "data": {
                "id": 42,
                "status": "success",
                "reference": "r/1",
                "amount": 500_000,
                "currency": "NGN",
            },
        },
    )
    answer = client(stub.url).verify(reference="r/1")
    assert (answer.status, answer.amount, answer.currency, answer.transaction_id) == (
        "success",
        500_000,
        "NGN",
        "42",
    )
    assert stub.requests[0]["path"] == "/transaction/verify/r%2F1"  # escaped, one segment


def test_secret_is_never_logged(stub, caplog):
    caplog.set_level(logging.DEBUG)
    stub.then(500, {"status": False}).then(400, {"status": False, "message": "refused"})
    c = client(stub.url)
    with pytest.raises(GatewayPermanentError):
        c.initialize(**INIT_ARGS)
    assert caplog.records, "the client logs what it does"
    assert SECRET not in caplog.text
    assert "r1" in caplog.text  # the reference is what identifies a call
    assert SECRET not in repr(c)


def test_signature_is_hmac_sha512_hex_of_the_raw_body():
    body = b'{"event":"charge.success","data":{"reference":"r1"}}'
    signature = sign(body, SECRET)
    assert len(signature) == 128
    assert signature_valid(body, signature, SECRET)
    assert signature_valid(body, signature.upper(), SECRET)
    assert not signature_valid(body + b" ", signature, SECRET)
    assert not signature_valid(body, sign(body, "another"), SECRET)
    assert not signature_valid(body, None, SECRET)
    assert not signature_valid(body, "", SECRET)
