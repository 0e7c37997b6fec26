"""The Content-Security-Policy middleware (fairqueue/csp.py): an answer
nothing marked gets the headers the settings make, built once per settings,
and a view's own ``csp_*`` decorator still has its way."""

from __future__ import annotations

import csp.middleware
import pytest

from fairqueue import csp as site_csp

pytestmark = pytest.mark.django_db

HEADER = "Content-Security-Policy"


def directives(policy: str) -> dict[str, list[str]]:
    return {name: values for name, *values in (part.split() for part in policy.split("; "))}


def test_unmarked_answers_share_one_build_until_a_setting_of_the_policy_changes(
    client, settings, monkeypatch
):
    built: list[bool] = []
    build = csp.middleware.build_policy

    def counted(*args, **kwargs):
        built.append(kwargs.get("report_only", False))
        return build(*args, **kwargs)

    monkeypatch.setattr(csp.middleware, "build_policy", counted)
    monkeypatch.setattr(site_csp, "build_policy", counted)
    settings.WS_PORT = 8001  # a setting of the policy: built again on the next answer

    answers = [client.get("/api/v1/events/") for _ in range(3)]
    first_builds = len(built)
    settings.WS_PORT = 8002
    after = client.get("/api/v1/events/")

    assert first_builds == 2  # the policy and the report-only one, once for the three
    assert len(built) == 4
    assert {a[HEADER] for a in answers} == {answers[0][HEADER]}
    assert directives(answers[0][HEADER])["connect-src"] == [
        "'self'",
        "ws://*:8001",
        "wss://*:8001",
    ]
    assert directives(after[HEADER])["connect-src"] == ["'self'", "ws://*:8002", "wss://*:8002"]
    assert directives(after[HEADER])["script-src"] == ["'self'"]


def test_a_decorated_view_keeps_its_own_sources_beside_the_site_ones(client, settings):
    settings.WS_PORT = 8001

    redoc = directives(client.get("/api/redoc/")[HEADER])
    plain = directives(client.get("/api/docs/")[HEADER])

    assert redoc["worker-src"] == ["'self'", "blob:"]
    assert redoc["connect-src"] == ["'self'", "ws://*:8001", "wss://*:8001"]
    assert "worker-src" not in plain
