"""The monitoring you can start (`docker compose --profile monitoring up`):
Prometheus' config and alert rules pass promtool, the alerts fire (and stay
quiet) as their unit tests say, the Grafana dashboard asks only for series
/metrics produces with valid PromQL, and the compose file wires healthchecks
and the monitoring profile."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.support.promtool import promtool
from tests.support.sales import join, on_sale

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = ROOT / "deploy" / "prometheus"
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "fairqueue.json"
FAMILY = re.compile(r"\b(fairqueue_[a-z_]+)")
SUFFIXES = re.compile(r"_(total|bucket|count|sum)$")


def output(result) -> str:
    return result.stdout.decode() + result.stderr.decode()


def dashboard_exprs() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [target["expr"] for panel in panels for target in panel["targets"]]


def test_the_alert_rules_pass_promtool_check_rules():
    result = promtool("check", "rules", PROMETHEUS / "alerts.yml")
    assert result.returncode == 0, output(result)
    assert "SUCCESS: 7 rules found" in output(result)


def test_the_alerts_fire_and_stay_quiet_as_their_unit_tests_say():
    result = promtool("test", "rules", PROMETHEUS / "alerts_test.yml")
    assert result.returncode == 0, output(result)
    assert "SUCCESS" in output(result)


def test_the_alerts_the_issue_asks_for_exist():
    rules = yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())["groups"][0]["rules"]
    names = {rule["alert"] for rule in rules}
    assert names == {
        "FairQueueAdmissionStalled",  # beat stalled
        "FairQueueWorkerOrBeatDown",
        "FairQueueWebhookFailures",
        "FairQueuePaymentsStuck",
        "FairQueueRefundOrDisputeWaiting",  # REFUND_REQUIRED or flagged
        "FairQueueDivergenceHealsSpiking",
        "FairQueueRedisErrors",
    }
    assert all(rule["annotations"]["summary"] and rule["labels"]["severity"] for rule in rules)


def test_the_prometheus_config_passes_promtool(tmp_path):
    """As compose runs it: the token file its entrypoint writes."""
    token = tmp_path / "metrics-token"
    token.write_text("t0ken")
    config = (
        (PROMETHEUS / "prometheus.yml").read_text().replace("/prometheus/metrics-token", str(token))
    )
    (tmp_path / "prometheus.yml").write_text(config)
    (tmp_path / "alerts.yml").write_text((PROMETHEUS / "alerts.yml").read_text())

    result = promtool("check", "config", tmp_path / "prometheus.yml")

    assert result.returncode == 0, output(result)
    jobs = {job["job_name"] for job in yaml.safe_load(config)["scrape_configs"]}
    assert jobs == {"fairqueue-web", "fairqueue-ws", "fairqueue-worker", "fairqueue-beat"}


def test_every_dashboard_query_is_valid_promql(tmp_path):
    """promtool parses recording rules' expressions: the dashboard's queries
    (with its $event variable filled in) are checked that way."""
    exprs = dashboard_exprs()
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:query_{i}", "expr": expr.replace("$event", ".*")}
                    for i, expr in enumerate(exprs)
                ],
            }
        ]
    }
    path = tmp_path / "dashboard_rules.yml"
    path.write_text(yaml.safe_dump(rules))

    result = promtool("check", "rules", path)

    assert result.returncode == 0, output(result)
    assert f"SUCCESS: {len(exprs)} rules found" in output(result)


@pytest.mark.django_db
def test_dashboard_and_alerts_ask_only_for_families_metrics_produces(client):
    tier = on_sale()
    join(tier.event)
    client.get(f"/api/v1/events/{tier.event_id}/")
    produced = {
        f.name for f in text_string_to_metric_families(client.get("/metrics").content.decode())
    }

    wanted = {
        SUFFIXES.sub("", name)
        for text in [*dashboard_exprs(), (PROMETHEUS / "alerts.yml").read_text()]
        for name in FAMILY.findall(text)
    }

    assert wanted - produced == set()
    assert len(wanted) >= 14


def test_the_dashboard_shows_what_the_issue_lists():
    panels = json.loads(DASHBOARD.read_text())["panels"]
    titles = " | ".join(p["title"].lower() for p in panels)
    for topic in ("waiting", "admission rate", "sell-through", "claims by result",
                  "payments by status", "latency", "redis errors", "worker health"):  # fmt: skip
        assert topic in titles, topic
    assert len({p["id"] for p in panels}) == len(panels)


def test_all_events_on_the_dashboard_leave_out_the_zero_without_an_event():
    """With no event to report, the sale's families answer one zero without
    labels (console/metrics.py); "All" events matches events that have a
    name, so no panel draws that zero as an event (a last tick at 0 would
    read as a tick half a century ago)."""
    [event] = json.loads(DASHBOARD.read_text())["templating"]["list"]
    assert (event["name"], event["allValue"]) == ("event", ".+")


def test_compose_wires_healthchecks_and_the_monitoring_profile():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    for name, probe in [
        ("web", ["http", "http://127.0.0.1:8000/healthz"]),
        ("ws", ["http", "http://127.0.0.1:8001/healthz"]),
        ("worker", ["heartbeat", "/tmp/fairqueue/worker"]),
        ("beat", ["heartbeat", "/tmp/fairqueue/beat"]),
    ]:
        test = services[name]["healthcheck"]["test"]
        assert test[:4] == ["CMD", "python", "-m", "console.probe"], name
        assert test[4:6] == probe, name
    for name in ("prometheus", "grafana"):
        assert services[name]["profiles"] == ["monitoring"]
        for volume in services[name]["volumes"]:
            source = volume.split(":", 1)[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), source
    assert services["worker"]["environment"]["CELERY_METRICS_PORT"] == "9100"
