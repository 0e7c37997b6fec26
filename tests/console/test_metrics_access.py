"""Who reads /metrics (event names, sales per tier, payment counts): the
holder of METRICS_TOKEN, or, without one, a caller on this machine with no
proxy in front; and Prometheus' plain-HTTP scrapes inside the network are
answered, not redirected to https. (Production refuses to start without the
token: tests/test_production_settings.py.)"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

TOKEN = "metrics-" + "k" * 8 + "0123456789abcdef"


def test_behind_a_proxy_loopback_is_the_proxy_and_opens_nothing(client, settings):
    """nginx on the same machine: every outside caller arrives from 127.0.0.1."""
    settings.METRICS_TOKEN = ""
    settings.NUM_PROXIES = 1

    outsider = client.get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.9")
    no_header = client.get("/metrics", REMOTE_ADDR="127.0.0.1")
    forged = client.get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="127.0.0.1")

    assert (outsider.status_code, no_header.status_code, forged.status_code) == (403, 403, 403)
    assert b"fairqueue_" not in outsider.content + no_header.content + forged.content


def test_behind_a_proxy_the_token_still_opens_them(client, settings):
    settings.METRICS_TOKEN = TOKEN
    settings.NUM_PROXIES = 1

    ok = client.get(
        "/metrics",
        REMOTE_ADDR="10.0.0.2",
        HTTP_X_FORWARDED_FOR="203.0.113.9",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )

    assert ok.status_code == 200
    assert b"fairqueue_queue_waiting" in ok.content


def test_prometheus_plain_http_scrapes_are_answered_with_the_https_redirect_on(client, settings):
    """web:8000/metrics and ws:8001/metrics are scraped over plain HTTP inside
    compose, where DJANGO_SECURE_SSL_REDIRECT is on."""
    settings.SECURE_SSL_REDIRECT = True
    settings.METRICS_TOKEN = TOKEN

    scrape = client.get("/metrics", HTTP_HOST="web:8000", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    health = client.get("/healthz", HTTP_HOST="web:8000")
    page = client.get("/", HTTP_HOST="web:8000")

    assert scrape.status_code == 200
    assert b"fairqueue_queue_waiting" in scrape.content
    assert health.status_code == 200
    assert page.status_code == 301  # everything else still goes to https
