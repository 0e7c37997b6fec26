"""Fixtures every test directory may use (registered in tests/conftest.py)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from rest_framework.test import APIClient

from devtools.sandbox import SandboxServer
from fairqueue import faults
from fairqueue import redis as app_redis_module
from fairqueue.redis import get_redis, make_client
from queueing import store
from queueing.store import QueueStore
from tests.support.payments import (
    CONTROL_TOKEN,
    RETRY_SCALE,
    PaidSale,
    Sandbox,
    Shop,
    make_paid_sale,
)
from tests.support.redis_cluster import RedisClusterServer
from tests.support.redis_server import RedisServer, app_redis
from tests.support.signin import REQUEST_URL, code_from

# Test modules that run twice: with the hot data on the suite's Redis, and on
# a 3-master Redis Cluster (REDIS_CLUSTER_URL). Tests with a Redis server of
# their own (own_redis, dead_redis) run once, on their server.
ON_CLUSTER_TOO = {
    "tests.queueing.test_store",
    "tests.queueing.test_admission",
    "tests.queueing.test_api",
    "tests.queueing.test_rebuild",
    "tests.queueing.test_reconcile_heals",
    "tests.claims.test_claim_api",
    "tests.claims.test_concurrency",
    "tests.claims.test_reconcile",
    "tests.claims.test_inventory_store",
    "tests.console.test_invariants_redis",
    "tests.system.test_flashsale_small",
    "tests.system.test_scale_out",
}
_OWN_SERVER_FIXTURES = {"own_redis", "dead_redis"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.module.__name__ not in ON_CLUSTER_TOO:
        return
    if _OWN_SERVER_FIXTURES & set(metafunc.fixturenames):
        return
    metafunc.parametrize("redis_backend", ["redis", "cluster"], indirect=True)


@pytest.fixture
def fault_hooks(monkeypatch) -> None:
    """Armed fault points fire (fairqueue/faults.py: off unless a test turns
    them on)."""
    monkeypatch.setattr(faults, "HOOKS_ENABLED", True)


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory) -> Iterator[RedisClusterServer]:
    """A 3-master Redis Cluster for the session (tests/support/redis_cluster.py)."""
    cluster = RedisClusterServer(tmp_path_factory.mktemp("redis-cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def on_cluster(request, settings) -> Iterator[RedisClusterServer]:
    """The hot data on the session's Redis Cluster (REDIS_CLUSTER_URL), empty;
    the channel layer and the broker stay on the suite's Redis."""
    cluster: RedisClusterServer = request.getfixturevalue("redis_cluster")
    cluster.ensure_running()
    cluster.flush()
    settings.REDIS_CLUSTER_URL = cluster.url
    app_redis_module.reset_clients()
    try:
        yield cluster
    finally:
        app_redis_module.reset_clients()
        settings.REDIS_CLUSTER_URL = ""
        cluster.flush()


@pytest.fixture(autouse=True)
def redis_backend(request) -> Iterator[str]:
    """ "redis" (the default) or "cluster" for the modules in ON_CLUSTER_TOO."""
    backend = getattr(request, "param", "redis")
    if backend == "cluster":
        request.getfixturevalue("on_cluster")
    yield backend


@pytest.fixture(autouse=True)
def redis_clean(redis_backend):
    """Every test starts with an empty Redis (the configured database only)."""
    client = get_redis()
    client.flushdb()
    yield client
    client.flushdb()


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@pytest.fixture
def run_on_commit(django_capture_on_commit_callbacks):
    """Run the after-commit work (Redis give-back, event status) at once."""

    def run(fn, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return fn(*args, **kwargs)

    return run


@pytest.fixture
def eager_tasks():
    """Celery tasks run where they are enqueued (tests have no worker)."""
    from config.celery import app

    before = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = before


@pytest.fixture(scope="session")
def sandbox_server() -> Iterator[SandboxServer]:
    from django.conf import settings

    server = SandboxServer(
        port=0,
        secret_key=settings.PAYSTACK_SECRET_KEY,
        control_token=CONTROL_TOKEN,
        webhook_retry_scale=RETRY_SCALE,
    ).start()
    yield server
    server.stop()


@pytest.fixture
def sandbox(sandbox_server: SandboxServer, settings) -> Sandbox:
    """A fresh sandbox for each test, and the app pointed at it."""
    sandbox_server.app.reset()
    sandbox_server.app.webhook_url = "http://127.0.0.1:9/unused"  # tests deliver by hand
    settings.PAYSTACK_BASE_URL = sandbox_server.url
    settings.PAYSTACK_TIMEOUT_SECONDS = 2.0
    settings.PAYSTACK_MAX_ATTEMPTS = 3
    settings.PAYSTACK_RETRY_BASE_SECONDS = 0.01
    return Sandbox(sandbox_server)


@pytest.fixture
def paid_sale(api, client, sandbox, django_capture_on_commit_callbacks) -> PaidSale:
    """An event sold through the API and the sandbox, one ticket left
    (tests.support.payments.make_paid_sale)."""
    return make_paid_sale(Shop(api, client, sandbox, django_capture_on_commit_callbacks))


@pytest.fixture
def dead_redis(monkeypatch):
    """Redis is down for the queue: its store talks to a port where nothing
    listens (a real client failing for real, not a mock)."""
    dead = make_client("redis://127.0.0.1:1/0")
    monkeypatch.setattr(store, "_store", QueueStore(client=dead))


@pytest.fixture
def closed_port() -> int:
    """A local TCP port nothing listens on (a dependency that is down)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def request_code(api, mailoutbox):
    """Ask for a code through the API; returns (the code that was emailed,
    the nonce the answer bound it to)."""

    def _request(email: str, **body: str) -> tuple[str, str]:
        sent_before = len(mailoutbox)
        response = api.post(REQUEST_URL, {"email": email, **body}, format="json")
        assert response.status_code == 202, response.content
        assert len(mailoutbox) == sent_before + 1
        return code_from(mailoutbox[-1]), response.json()["nonce"]

    return _request


@pytest.fixture
def own_redis(tmp_path, monkeypatch, settings):
    """A real redis-server of this test's own, which the app uses and the test
    may ``stop()`` and ``start()`` again (tests/support/redis_server.py)."""
    server = RedisServer(tmp_path)
    server.start()
    try:
        with app_redis(server, monkeypatch, settings):
            yield server
    finally:
        server.stop()
