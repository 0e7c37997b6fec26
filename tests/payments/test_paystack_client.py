"""The Paystack client over real HTTP (a scripted stub server, and the sandbox):
retries for transient failures only, bounded, typed errors, secret never logged."""

import logging
import time
from datetime import UTC, datetime

import pytest

from payments import paystack
from payments.paystack import (
    GatewayPermanentError,
    GatewayTransientError,
    PaystackClient,
    retry_after_seconds,
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


def test_refund_lookups_use_the_refund_endpoints(stub):
    refund = {"id": 77, "status": "processed", "amount": 100, "currency": "NGN",
              "transaction": {"reference": "r1"}}  # fmt: skip
    stub.then(200, {"status": True, "message": "Refund retrieved", "data": refund})
    stub.then(
        200,
        {
            "status": True,
            "message": "Refunds retrieved",
            "data": [refund, {**refund, "id": 78, "transaction": {"reference": "other"}}],
        },
    )
    c = client(stub.url)

    fetched = c.refund_fetch(refund_id="77", reference="r1")
    listed = c.refunds_of(reference="r1")

    assert (fetched.refund_id, fetched.status, fetched.transaction_reference) == (
        "77",
        "processed",
        "r1",
    )
    # A filter the gateway ignored must not hand us another transaction's refund.
    assert [a.refund_id for a in listed] == ["77"]
    assert [r["path"] for r in stub.requests] == ["/refund/77", "/refund?reference=r1"]
    assert {r["method"] for r in stub.requests} == {"GET"}


def test_partial_refund_sends_the_amount(stub):
    stub.then(200, {"status": True, "data": {"id": 1, "status": "pending", "amount": 50}})
    client(stub.url).refund(
        reference="r1", amount=50, currency="NGN", merchant_note="m", customer_note="c"
    )
    assert stub.requests[0]["body"]["amount"] == 50


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("30", 30),
        ("0", 0),
        ("Wed, 21 Oct 2015 07:28:30 GMT", 30),
        ("999999", 3600),  # not believed past an hour
        ("soon", None),
        (None, None),
    ],
)
def test_retry_after_is_read_as_seconds(header, seconds):
    now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC)
    assert retry_after_seconds(header, now=now) == seconds


@pytest.mark.parametrize(
    ("status", "refused"), [(401, True), (403, True), (400, False), (404, False)]
)
def test_a_refused_key_is_told_apart(stub, status, refused):
    stub.then(status, {"status": False, "message": "nope"})
    with pytest.raises(GatewayPermanentError) as error:
        client(stub.url).verify(reference="r1")
    assert error.value.credentials_refused is refused
    assert error.value.reference_not_found is (status == 404)


@pytest.fixture
def environment_read_anew(monkeypatch):
    """The client reads the proxy settings once per process; each test here
    starts from its own environment."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    paystack._route.cache_clear()
    yield monkeypatch
    paystack._route.cache_clear()


def test_calls_go_through_the_proxy_the_environment_names_at_start(stub, environment_read_anew):
    """The stub is the proxy: it sees the gateway's absolute URL (a host that
    does not resolve, so only the proxy can have answered). The variable
    gone later changes nothing: it is read once, not on every call."""
    environment_read_anew.setenv("HTTP_PROXY", stub.url)
    stub.then(200, INIT_OK).then(200, INIT_OK)
    gateway = client("http://gateway.invalid")

    gateway.initialize(**INIT_ARGS)
    environment_read_anew.delenv("HTTP_PROXY")
    gateway.initialize(**INIT_ARGS)

    assert [r["path"] for r in stub.requests] == [
        "http://gateway.invalid/transaction/initialize"
    ] * 2


def test_no_proxy_keeps_the_gateway_direct(stub, environment_read_anew):
    environment_read_anew.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nobody listens
    environment_read_anew.setenv("NO_PROXY", "127.0.0.1")
    stub.then(200, INIT_OK)

    client(stub.url).initialize(**INIT_ARGS)

    assert [r["path"] for r in stub.requests] == ["/transaction/initialize"]
