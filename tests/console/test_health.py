"""GET /healthz checks the real dependencies: 200 when Postgres and Redis
answer, 503 when either is unreachable."""

import socket

import pytest
import redis
from django.db import connection

import fairqueue.redis

pytestmark = pytest.mark.django_db


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_healthy_when_both_answer(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"postgres": "ok", "redis": "ok"}}


def test_503_when_redis_is_unreachable(client, monkeypatch, closed_port):
    # The dependency is down (nothing listens on the port), our code is real.
    monkeypatch.setattr(
        fairqueue.redis,
        "_client",
        redis.Redis(host="127.0.0.1", port=closed_port, socket_connect_timeout=1),
    )

    response = client.get("/healthz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "degraded"
    assert body["checks"]["postgres"] == "ok"
    assert body["checks"]["redis"] == "error: ConnectionError"


@pytest.mark.django_db(transaction=True)
def test_503_when_postgres_is_unreachable(client, closed_port):
    original = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict["PORT"] = closed_port
    connection.settings_dict["HOST"] = "127.0.0.1"
    try:
        response = client.get("/healthz")
    finally:
        connection.close()
        connection.settings_dict.update(original)

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "degraded"
    assert body["checks"]["redis"] == "ok"
    assert body["checks"]["postgres"] == "error: OperationalError"
