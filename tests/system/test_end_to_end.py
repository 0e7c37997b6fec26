"""One customer from sign-in to a CONFIRMED claim, the way a client does it:
the HTTP API of a live server, the queue WebSocket (the real ASGI app and
Redis channel layer), the admission tick, and the sandbox gateway paying
over HTTP and sending its signed webhook back to the live server."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
import requests
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.core import mail
from django.utils import timezone

from claims.models import Claim
from config.asgi import application
from devtools.sandbox import SandboxServer
from events.services import TierSpec, event_activate, event_create
from payments.models import Payment
from queueing.tasks import admission_tick
from tests.support.factories import OrganizerFactory
from tests.support.payments import CONTROL_TOKEN, WEBHOOK_PATH, Sandbox

pytestmark = pytest.mark.django_db(transaction=True)


def api(base: str, method: str, path: str, token: str | None = None, **kwargs):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.request(method, f"{base}/api/v1/{path}", headers=headers, timeout=15, **kwargs)


def wait_for(predicate, timeout: float = 15.0):
    """Asks as a page would, a few times a second: faster, a customer's
    reads would meet their bucket (customers/throttling.py)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError("timed out waiting")


@pytest.fixture
def sandbox(live_server, settings):
    """The sandbox gateway on a free port, webhooks to the live server."""
    server = SandboxServer(
        port=0,
        secret_key=settings.PAYSTACK_SECRET_KEY,
        webhook_url=live_server.url + WEBHOOK_PATH,
        control_token=CONTROL_TOKEN,
    ).start()
    settings.PAYSTACK_BASE_URL = server.url
    settings.PUBLIC_BASE_URL = live_server.url
    yield Sandbox(server)
    server.stop()


def test_one_customer_from_sign_in_to_confirmed(live_server, sandbox):
    base = live_server.url
    now = timezone.now()
    event = event_create(
        organizer=OrganizerFactory(),
        name="Detty December",
        sale_start=now - timedelta(minutes=1),
        sale_end=now + timedelta(hours=1),
        tiers=[TierSpec("Regular", 500_000, 3)],
        admission_batch_size=10,
    )
    event_activate(event_id=event.id)
    tier = event.tiers.get()
    email = "ada@example.test"

    # Sign in with the emailed one-time code.
    requested = api(base, "POST", "auth/otp/request/", json={"email": email})
    assert requested.status_code == 202
    code = re.search(r"\b(\d{6})\b", mail.outbox[-1].body).group(1)
    nonce = requested.json()["nonce"]
    signed_in = api(
        base, "POST", "auth/otp/verify/", json={"email": email, "code": code, "nonce": nonce}
    )
    assert signed_in.status_code == 200, signed_in.text
    token = signed_in.json()["token"]

    # Join the queue.
    joined = api(base, "POST", f"events/{event.id}/queue/", token, json={})
    assert joined.status_code == 201, joined.text
    assert joined.json()["status"] == "WAITING"
    assert joined.json()["position"] == 1

    # Listen on the WebSocket (opened with a single-use ticket) while the
    # admission tick runs.
    issued = api(base, "POST", f"events/{event.id}/queue/ws-ticket/", token)
    assert issued.status_code == 201, issued.text
    ticket = issued.json()["ticket"]

    async def admitted_over_websocket() -> dict:
        ws = WebsocketCommunicator(application, f"/ws/events/{event.id}/queue/?ticket={ticket}")
        connected, _ = await ws.connect()
        assert connected
        snapshot = await ws.receive_json_from(timeout=5)
        assert (snapshot["type"], snapshot["status"], snapshot["position"]) == (
            "position",
            "WAITING",
            1,
        )
        assert await sync_to_async(admission_tick)() == 1
        while True:
            message = await ws.receive_json_from(timeout=5)
            if message["type"] == "admitted":
                await ws.disconnect()
                return message

    admitted = async_to_sync(admitted_over_websocket)()
    assert admitted["event_id"] == str(event.id)

    # Claim a ticket with the admission token.
    claimed = requests.post(
        f"{base}/api/v1/events/{event.id}/claims/",
        json={
            "admission_token": admitted["admission_token"],
            "tier_id": str(tier.id),
            "quantity": 1,
        },
        headers={"Authorization": f"Bearer {token}", "Idempotency-Key": "claim-1"},
        timeout=15,
    )
    assert claimed.status_code == 201, claimed.text
    claim_id = claimed.json()["claim_id"]
    assert claimed.json()["status"] == "CLAIMED"
    assert claimed.json()["amount"] == 500_000

    # Start paying.
    started = requests.post(
        f"{base}/api/v1/claims/{claim_id}/payments/",
        json={},
        headers={"Authorization": f"Bearer {token}", "Idempotency-Key": "pay-1"},
        timeout=15,
    )
    assert started.status_code == 201, started.text
    payment = started.json()
    assert payment["status"] == "PENDING"

    # The customer's browser: the checkout page, then Pay.
    page = requests.get(payment["authorization_url"], timeout=15)
    assert page.status_code == 200
    pay_action = re.search(r'action="([^"]+/pay)"', page.text).group(1)
    redirect = requests.post(sandbox.url + pay_action, allow_redirects=False, timeout=15)
    assert redirect.status_code == 303
    assert redirect.headers["Location"].startswith(f"{base}/payments/return/")

    # The gateway's signed webhook reaches the live server and confirms.
    confirmed = wait_for(
        lambda: (
            api(base, "GET", f"payments/{payment['payment_id']}/", token).json()["status"]
            == "CONFIRMED"
        )
    )
    assert confirmed
    claim = api(base, "GET", f"claims/{claim_id}/", token)
    assert claim.status_code == 200
    assert claim.json()["status"] == "CONFIRMED"
    assert Claim.objects.get(pk=claim_id).tickets.count() == 1
    assert (
        Payment.objects.get(pk=payment["payment_id"]).events.filter(kind="webhook_received").count()
        == 1
    )
    wait_for(lambda: sandbox.transaction(payment["reference"])["webhooks"])
    assert sandbox.transaction(payment["reference"])["webhooks"][0]["result"] == 200
    landing = requests.get(redirect.headers["Location"], timeout=15)
    assert "<h1>Paid</h1>" in landing.text
    assert landing.text.count('class="ticket"') == 0  # the reference opens no ticket
    mine = api(base, "GET", "me/tickets/", token).json()["results"]
    assert [t["status"] for t in mine] == ["valid"]  # the sign-in does
