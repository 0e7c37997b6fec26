"""GET /readyz in-process: the admission check against the ticks' real
records, the worker check against the real broker (no worker runs here),
and the probe's heartbeat rule. The whole thing with real processes is
tests/console/test_stack.py."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from console import probe
from console.health import admission_check, workers_check
from events.models import Event
from queueing import services
from queueing.models import AdmissionState
from queueing.store import queue_store
from tests.support.sales import join, on_sale

pytestmark = pytest.mark.django_db


def age_event(event: Event, seconds: float) -> None:
    """The event went on sale (and was last changed) ``seconds`` ago."""
    then = timezone.now() - timedelta(seconds=seconds)
    Event.objects.filter(pk=event.pk).update(sale_start=then, updated_at=then)


def the_last_tick_ran(event: Event, seconds_ago: float) -> None:
    """Time passes: the last tick ran ``seconds_ago`` (its records moved back:
    the admission state's ``last_tick_at`` and its rate sample in Redis)."""
    then = timezone.now() - timedelta(seconds=seconds_ago)
    AdmissionState.objects.filter(event=event).update(last_tick_at=then)
    store = queue_store()
    newest = store.r.lindex(store.ticks_key(event.pk), 0)
    if newest is not None:
        _, rest = newest.split(":", 1)
        store.r.lset(store.ticks_key(event.pk), 0, f"{int(then.timestamp() * 1000)}:{rest}")


def last_tick_metric(client, event: Event) -> float | None:
    response = client.get("/metrics")
    assert response.status_code == 200
    for family in text_string_to_metric_families(response.content.decode()):
        if family.name == "fairqueue_admission_last_tick_timestamp_seconds":
            for sample in family.samples:
                if sample.labels["event"] == str(event.pk):
                    return sample.value
    return None


def test_nothing_on_sale_is_ready(settings):
    on_sale(status="PAUSED")
    on_sale(status="DRAFT")
    assert admission_check() == "ok (no event on sale)"


def test_an_event_on_sale_that_ticked_recently_is_ok():
    tier = on_sale()
    age_event(tier.event, 60)
    services.admission_tick_event(event_id=tier.event_id)
    assert admission_check() == "ok"


def test_no_tick_for_three_intervals_is_not_ready(settings):
    settings.ADMISSION_INTERVAL_SECONDS = 5
    tier = on_sale()
    age_event(tier.event, 60)
    services.admission_tick_event(event_id=tier.event_id)
    the_last_tick_ran(tier.event, seconds_ago=16)

    check = admission_check()

    assert check.startswith("error: no admission tick for over 15 s: ")
    assert f"{tier.event_id} (last tick 16 s ago)" in check


def test_ticks_that_admit_nobody_keep_a_busy_sale_ready(client, settings):
    """The height of a sale: every free ticket is held by an admitted
    customer, so ticks admit nobody. They still ran: ready, and the metric
    the stall alert reads is fresh."""
    settings.ADMISSION_INTERVAL_SECONDS = 5
    tier = on_sale(tickets=2)
    age_event(tier.event, 60)
    for _ in range(3):
        join(tier.event)
    assert services.admission_tick_event(event_id=tier.event_id).admitted == 2
    the_last_tick_ran(tier.event, seconds_ago=16)
    assert admission_check().startswith("error: no admission tick for over 15 s")

    report = services.admission_tick_event(event_id=tier.event_id)

    assert admission_check() == "ok"
    assert time.time() - 5 < last_tick_metric(client, tier.event) <= time.time()
    assert (report.capacity, report.admitted) == (0, 0)


def test_a_never_ticked_event_gets_grace_from_going_on_sale(settings):
    settings.ADMISSION_INTERVAL_SECONDS = 5
    fresh = on_sale()
    age_event(fresh.event, 10)
    assert admission_check() == "ok"

    age_event(fresh.event, 20)
    assert admission_check() == (
        f"error: no admission tick for over 15 s: {fresh.event_id} (last tick never)"
    )


def test_no_worker_answering_is_not_ready_and_readyz_says_why(client, settings):
    settings.READYZ_WORKER_TIMEOUT_SECONDS = 0.3
    assert workers_check() == "error: no Celery worker answered within 0.3 s"

    response = client.get("/readyz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not_ready"
    assert body["checks"] == {
        "postgres": "ok",
        "redis": "ok",
        "admission": "ok (no event on sale)",
        "workers": "error: no Celery worker answered within 0.3 s",
    }


def test_redis_down_is_not_ready_without_asking_further(client, monkeypatch, closed_port):
    import redis

    import fairqueue.redis

    monkeypatch.setattr(
        fairqueue.redis,
        "_client",
        redis.Redis(host="127.0.0.1", port=closed_port, socket_connect_timeout=0.2),
    )

    body = client.get("/readyz").json()

    assert body["checks"]["redis"] == "error: ConnectionError"
    assert (body["checks"]["admission"], body["checks"]["workers"]) == ("unknown", "unknown")


def test_the_heartbeat_probe(tmp_path):
    beat = tmp_path / "beat"
    assert "missing" in probe.check_heartbeat(beat, 20)
    beat.touch()
    assert probe.check_heartbeat(beat, 20) is None
    assert "old (limit 20 s)" in probe.check_heartbeat(beat, 20, now=time.time() + 30)
    assert probe.main(["heartbeat", str(beat)]) == 0
    assert probe.main(["heartbeat", str(tmp_path / "worker")]) == 1


def test_the_http_probe(live_server, closed_port):
    assert probe.check_http(f"{live_server.url}/healthz", 3) is None
    assert probe.check_http(f"{live_server.url}/nope", 3).endswith("answered 404")
    assert "unreachable" in probe.check_http(f"http://127.0.0.1:{closed_port}/healthz", 1)
