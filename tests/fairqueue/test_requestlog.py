"""Logs people can use (fairqueue/logs.py, fairqueue/requestlog.py): one line
per HTTP request with method, route, status, duration and request id; JSON
lines with the request id and event id under LOG_FORMAT=json; Celery's
per-task chatter only at DEBUG; and the request latency histogram by route."""

from __future__ import annotations

import io
import json
import logging
import logging.config
import uuid

import pytest
from django.conf import settings

from fairqueue.logs import logging_config
from tests.support.metrics import sample
from tests.support.sales import make_event

pytestmark = pytest.mark.django_db

EVENT_ROUTE = "api/v1/events/<uuid:event_id>/"


@pytest.fixture
def log_output():
    """The settings' logging config with its console handler writing here."""

    def configure(fmt: str = "plain", level: str = "INFO") -> io.StringIO:
        logging.config.dictConfig(logging_config(level=level, fmt=fmt))
        [handler] = logging.getLogger().handlers
        handler.setStream(stream := io.StringIO())
        return stream

    yield configure
    logging.config.dictConfig(settings.LOGGING)


def test_one_line_per_request_with_route_status_duration_and_request_id(client, log_output):
    event = make_event()
    out = log_output()

    response = client.get(f"/api/v1/events/{event.id}/")

    request_id = response["X-Request-ID"]
    assert len(request_id) == 32
    lines = [line for line in out.getvalue().splitlines() if "fairqueue.http" in line]
    assert len(lines) == 1
    assert f"INFO fairqueue.http [{request_id}] GET {EVENT_ROUTE} 200 " in lines[0]
    assert lines[0].endswith("ms")


def test_json_lines_carry_the_request_id_and_the_event_id(client, log_output):
    event = make_event()
    out = log_output(fmt="json")
    given = f"edge-{uuid.uuid4().hex[:12]}"

    response = client.get(f"/api/v1/events/{event.id}/", HTTP_X_REQUEST_ID=given)

    assert response["X-Request-ID"] == given  # a proxy's id is kept
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    [access] = [r for r in records if r["logger"] == "fairqueue.http"]
    assert access["request_id"] == given
    assert access["event_id"] == str(event.id)
    assert (access["http_method"], access["route"], access["status"]) == ("GET", EVENT_ROUTE, 200)
    assert access["level"] == "INFO"
    assert isinstance(access["duration_ms"], float)
    assert {"time", "message"} <= set(access)


def test_a_malformed_request_id_is_replaced(client, log_output):
    log_output()
    response = client.get("/api/v1/events/", HTTP_X_REQUEST_ID="bad id\nwith newline")
    assert response["X-Request-ID"] != "bad id\nwith newline"
    assert len(response["X-Request-ID"]) == 32


def test_a_line_outside_any_request_has_no_ids_in_json(log_output):
    out = log_output(fmt="json")
    logging.getLogger("anything").warning("hello")
    [record] = [json.loads(line) for line in out.getvalue().splitlines()]
    assert record["message"] == "hello"
    assert "request_id" not in record and "event_id" not in record


def test_probes_log_at_debug_only(client, log_output):
    out = log_output()
    assert client.get("/healthz").status_code == 200
    assert "fairqueue.http" not in out.getvalue()

    out = log_output(level="DEBUG")
    client.get("/healthz")
    assert "DEBUG fairqueue.http" in out.getvalue()


def test_an_unknown_url_is_one_unmatched_route(client, log_output):
    out = log_output()
    before = sample(
        "fairqueue_http_request_duration_seconds_count",
        method="GET",
        route="<unmatched>",
        status="404",
    )

    client.get(f"/no/such/page/{uuid.uuid4()}/")

    assert "GET <unmatched> 404" in out.getvalue()
    assert (
        sample(
            "fairqueue_http_request_duration_seconds_count",
            method="GET",
            route="<unmatched>",
            status="404",
        )
        == before + 1
    )


def test_request_latency_is_recorded_by_route_not_by_path(client):
    labels = {"method": "GET", "route": EVENT_ROUTE, "status": "200"}
    before = sample("fairqueue_http_request_duration_seconds_count", **labels)

    for _ in range(3):
        client.get(f"/api/v1/events/{make_event().id}/")

    assert sample("fairqueue_http_request_duration_seconds_count", **labels) == before + 3


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("celery.app.trace", "Task queueing.tasks.admission_tick[abc] succeeded in 0.01s"),
        ("celery.worker.strategy", "Task queueing.tasks.admission_tick[abc] received"),
        ("celery.beat", "Scheduler: Sending due task tick (queueing.tasks.admission_tick)"),
    ],
)
def test_celery_per_task_chatter_is_debug(log_output, name, line):
    out = log_output()
    logging.getLogger(name).info(line)
    logging.getLogger(name).error("Task queueing.tasks.admission_tick[abc] raised Boom")
    assert out.getvalue().count("\n") == 1
    assert f"ERROR {name}" in out.getvalue()

    out = log_output(level="DEBUG")
    logging.getLogger(name).info(line)
    assert f"DEBUG {name}" in out.getvalue()


def test_beat_says_it_started_at_info(log_output):
    """`make run` waits for this line before its banner (devtools/devstack)."""
    out = log_output()
    logging.getLogger("celery.beat").info("beat: Starting...")
    assert "INFO celery.beat [-] beat: Starting..." in out.getvalue()


def test_other_info_lines_stay_info(log_output):
    out = log_output()
    logging.getLogger("queueing.services.admission").info("admitted event=x count=3")
    assert "INFO queueing.services.admission [-] admitted event=x count=3" in out.getvalue()


def test_log_format_is_checked():
    with pytest.raises(ValueError, match="plain or json"):
        logging_config(fmt="yaml")
