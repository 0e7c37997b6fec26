"""GET /metrics: every family of the contract, with values that match the
sale, accepted by `promtool check metrics`, behind METRICS_TOKEN or loopback."""

from __future__ import annotations

import re
import time

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from claims.services import claim_create
from config.asgi import application
from fairqueue.errors import AppError
from payments.domain import PaymentStatus
from payments.paystack import sign
from payments.services.records import payment_transition
from queueing import services
from queueing.services import ws_ticket_issue
from queueing.store import QueueStore
from tests.support.factories import CustomerFactory, TierFactory
from tests.support.metrics import sample
from tests.support.promtool import promtool
from tests.support.sales import (
    admit_directly,
    claim_one,
    hold_tickets,
    join,
    make_customers,
    on_sale,
    pay,
)

pytestmark = pytest.mark.django_db

CONTRACT = {  # family (as Prometheus names it) -> (type, labels it must carry)
    "fairqueue_queue_waiting": ("gauge", {"event"}),
    "fairqueue_queue_admitted": ("gauge", {"event"}),
    "fairqueue_tickets_available": ("gauge", {"event", "tier"}),
    "fairqueue_tickets_sold": ("counter", {"event", "tier"}),
    "fairqueue_admission_last_tick_timestamp_seconds": ("gauge", {"event"}),
    "fairqueue_admission_tick_duration_seconds": ("histogram", {"event"}),
    "fairqueue_admitted": ("counter", {"event"}),
    "fairqueue_claims": ("counter", {"result"}),
    "fairqueue_payments": ("counter", {"event", "status"}),
    "fairqueue_webhooks": ("counter", {"outcome"}),
    "fairqueue_reconcile_heals": ("counter", {"kind"}),
    "fairqueue_redis_errors": ("counter", {"operation"}),
    "fairqueue_websocket_connections": ("gauge", set()),
    "fairqueue_task_duration_seconds": ("histogram", {"task"}),
    "fairqueue_http_request_duration_seconds": ("histogram", {"method", "route", "status"}),
}


def scrape(client, **headers) -> dict[str, object]:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return {f.name: f for f in text_string_to_metric_families(response.content.decode())}


def value(families, name: str, **labels: str) -> float | None:
    family = families[re.sub(r"_(total|count|sum|bucket)$", "", name)]
    for s in family.samples:
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    return None


@pytest.fixture
def sale(sandbox):
    """A sale in progress: 2 tiers, 5 waiting, 2 admitted, one claim paid,
    one held, one payment flagged, a webhook processed and one refused."""
    tier = on_sale(tickets=10, price=500_000)
    vip = TierFactory(event=tier.event, name="VIP", inventory=4, price=2_000_000)
    event = tier.event
    for _ in range(5):
        join(event)
    buyers = admit_directly(event, make_customers(4))
    paid = claim_one(tier, buyers[0])
    held = claim_one(tier, buyers[1])
    payment = pay(paid)
    assert payment_transition(payment=payment, target=PaymentStatus.CONFIRMED, actor="webhook")
    from claims.services import claim_confirm

    claim_confirm(claim_id=paid.pk)
    flagged = pay(held)
    type(flagged).objects.filter(pk=flagged.pk).update(flag_reason="amount 1 != expected 2")
    services.admission_tick_event(event_id=event.id)
    return event, tier, vip


def test_every_contract_family_is_there_and_promtool_accepts_the_output(client, sale):
    client.post("/api/v1/webhooks/paystack/", b"{}", content_type="application/json")

    response = client.get("/metrics")
    checked = promtool("check", "metrics", stdin=response.content)

    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()
    families = {f.name: f for f in text_string_to_metric_families(response.content.decode())}
    for name, (kind, labels) in CONTRACT.items():
        assert name in families, name
        assert families[name].type == kind, name
        for s in families[name].samples:
            assert labels <= set(s.labels), (name, s.labels)


def test_the_sale_families_match_the_sale(client, sale):
    event, tier, _ = sale
    eid = str(event.id)

    families = scrape(client)

    # 14 tickets, 2 held by claims, 2 admissions still live: the tick admitted
    # all 5 waiting (capacity 12 - 2 = 10).
    assert value(families, "fairqueue_queue_waiting", event=eid) == 0
    assert value(families, "fairqueue_queue_admitted", event=eid) == 2 + 5
    assert value(families, "fairqueue_admitted_total", event=eid) == 4 + 5
    assert value(families, "fairqueue_tickets_available", event=eid, tier=tier.name) == 8
    assert value(families, "fairqueue_tickets_available", event=eid, tier="VIP") == 4
    assert value(families, "fairqueue_tickets_sold_total", event=eid, tier=tier.name) == 1
    assert value(families, "fairqueue_tickets_sold_total", event=eid, tier="VIP") == 0
    assert value(families, "fairqueue_tickets_inventory", event=eid, tier="VIP") == 4
    tick = value(families, "fairqueue_admission_last_tick_timestamp_seconds", event=eid)
    assert time.time() - 10 < tick <= time.time()
    assert value(families, "fairqueue_event_on_sale", event=eid) == 1
    assert (
        value(families, "fairqueue_payments_total", event=eid, status="CONFIRMED", actor="webhook")
        == 1
    )
    assert value(families, "fairqueue_payments_attention", event=eid, reason="flagged") == 1
    assert value(families, "fairqueue_payments_attention", event=eid, reason="stuck") == 0
    for reason in ("blocked", "overdue", "refund_pending", "refund_failed", "disputed"):
        assert value(families, "fairqueue_payments_attention", event=eid, reason=reason) == 0
    assert value(families, "fairqueue_admission_tick_duration_seconds_count", event=eid) == 1


def test_an_event_never_ticked_has_no_last_tick_sample(client):
    tier = on_sale()

    families = scrape(client)

    assert value(families, "fairqueue_queue_waiting", event=str(tier.event_id)) == 0
    assert (
        value(families, "fairqueue_admission_last_tick_timestamp_seconds", event=str(tier.event_id))
        is None
    )
    assert (
        value(families, "fairqueue_payments_attention", event=str(tier.event_id), reason="stuck")
        == 0
    )


def test_claim_attempts_are_counted_by_result():
    tier = on_sale(tickets=1)
    first, second = admit_directly(tier.event, make_customers(2))
    created = sample("fairqueue_claims_total", result="created")
    sold_out = sample("fairqueue_claims_total", result="sold_out")
    invalid = sample("fairqueue_claims_total", result="invalid_quantity")

    claim_one(tier, first)
    with pytest.raises(AppError):
        claim_one(tier, second)
    with pytest.raises(AppError):
        claim_create(
            event_id=tier.event_id,
            customer_id=second.customer.id,
            admission_token=second.token,
            tier_id=tier.id,
            quantity=0,
        )

    assert sample("fairqueue_claims_total", result="created") == created + 1
    assert sample("fairqueue_claims_total", result="sold_out") == sold_out + 1
    assert sample("fairqueue_claims_total", result="invalid_quantity") == invalid + 1


def test_webhooks_are_counted_by_outcome(client):
    url = "/api/v1/webhooks/paystack/"
    refused = sample("fairqueue_webhooks_total", outcome="invalid_signature")
    unknown = sample("fairqueue_webhooks_total", outcome="unknown_reference")
    body = b'{"event": "charge.success", "data": {"reference": "fq_nobody"}}'

    client.post(url, body, content_type="application/json", HTTP_X_PAYSTACK_SIGNATURE="00")
    client.post(
        url,
        body,
        content_type="application/json",
        HTTP_X_PAYSTACK_SIGNATURE=sign(body, settings.PAYSTACK_SECRET_KEY),
    )

    assert sample("fairqueue_webhooks_total", outcome="invalid_signature") == refused + 1
    assert sample("fairqueue_webhooks_total", outcome="unknown_reference") == unknown + 1


def test_redis_failures_are_counted_through_the_failure_hook(monkeypatch, closed_port):
    import redis

    from queueing import store

    dead = redis.Redis(host="127.0.0.1", port=closed_port, socket_connect_timeout=0.2)
    monkeypatch.setattr(store, "_store", QueueStore(client=dead))
    before = sample("fairqueue_redis_errors_total", operation="QueueStore.rate")

    assert store.queue_store().rate(event_id="e") is None

    after = sample("fairqueue_redis_errors_total", operation="QueueStore.rate")
    assert after == before + 1


@pytest.mark.django_db(transaction=True)
def test_open_websockets_are_a_gauge():
    tier = on_sale()
    customer = CustomerFactory()
    join(tier.event, customer)
    ticket = ws_ticket_issue(event_id=tier.event_id, customer_id=customer.id).ticket
    before = sample("fairqueue_websocket_connections")

    async def scenario() -> tuple[float, float]:
        ws = WebsocketCommunicator(
            application, f"/ws/events/{tier.event_id}/queue/?ticket={ticket}"
        )
        connected, _ = await ws.connect()
        assert connected
        await ws.receive_json_from(timeout=5)
        during = sample("fairqueue_websocket_connections")
        await ws.disconnect()
        return during, sample("fairqueue_websocket_connections")

    during, after = async_to_sync(scenario)()
    assert (during, after) == (before + 1, before)


def test_task_runs_are_timed_by_task_name():
    from queueing.tasks import admission_tick

    on_sale()
    before = sample("fairqueue_task_duration_seconds_count", task="queueing.tasks.admission_tick")

    admission_tick.apply()

    after = sample("fairqueue_task_duration_seconds_count", task="queueing.tasks.admission_tick")
    assert after == before + 1


# --- access ------------------------------------------------------------------------


def test_without_a_token_only_loopback_callers_get_the_metrics(client, settings):
    settings.METRICS_TOKEN = ""

    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="::1").status_code == 200
    refused = client.get("/metrics", REMOTE_ADDR="10.1.2.3")
    assert refused.status_code == 403
    assert b"fairqueue_" not in refused.content


def test_with_a_token_the_bearer_must_match(client, settings):
    settings.METRICS_TOKEN = "s3cret-token"

    assert client.get("/metrics").status_code == 401  # loopback is not enough now
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Basic s3cret-token").status_code == 401
    ok = client.get("/metrics", REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer s3cret-token")
    assert ok.status_code == 200
    assert b"fairqueue_queue_waiting" in ok.content
    assert client.get("/metrics")["WWW-Authenticate"] == 'Bearer realm="metrics"'


def test_held_tickets_are_not_available(client):
    tier = on_sale(tickets=5)
    hold_tickets(tier, 2, status="CLAIMED")
    hold_tickets(tier, 1, status="CONFIRMED")

    families = scrape(client)

    eid = str(tier.event_id)
    assert value(families, "fairqueue_tickets_available", event=eid, tier=tier.name) == 2
    assert value(families, "fairqueue_tickets_sold_total", event=eid, tier=tier.name) == 1
