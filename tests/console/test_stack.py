"""The observability of a running system, as `make run` starts it: web (two
workers), a Celery worker and beat as real processes sharing one
prometheus-client multiprocess directory, an event on sale, admission
ticking every second.

- /metrics on the web port adds up what every process recorded: requests
  served by either web worker, and task runs timed in the Celery worker;
- Celery's per-task lines stay out of the INFO log of worker and beat;
- the heartbeat probes of the compose healthchecks pass;
- /readyz is 200, then 503 within 3 ticks once beat is killed (admission
  stalled), and 503 once no worker is left to answer.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
from django.conf import settings
from django.db import connection
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from console import probe
from devtools import devstack
from tests.support.sales import on_sale

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

TICK_SECONDS = 1
ROUTE = "api/v1/events/"


class Stack:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.port = devstack.free_port()
        self.metrics_dir = base / "metrics"
        self.heartbeats = base / "heartbeats"
        self.procs: dict[str, object] = {}
        self.logs: dict[str, Path] = {}
        db = urlsplit(os.environ["DATABASE_URL"])._replace(
            path="/" + connection.settings_dict["NAME"]
        )
        self.env = {
            **os.environ,
            "DATABASE_URL": db.geturl(),
            "DJANGO_SECRET_KEY": settings.SECRET_KEY,
            "TOKEN_SIGNING_KEY": settings.TOKEN_SIGNING_KEY,
            "PORT": str(self.port),
            "WS_PORT": str(devstack.free_port()),
            "SANDBOX_PORT": str(devstack.free_port()),
            "WEB_CONCURRENCY": "2",
            "ADMISSION_INTERVAL_SECONDS": str(TICK_SECONDS),
            "PROMETHEUS_MULTIPROC_DIR": str(self.metrics_dir),
            "HEARTBEAT_DIR": str(self.heartbeats),
            "LOG_LEVEL": "INFO",
            "METRICS_TOKEN": "",
        }
        self.metrics_dir.mkdir()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, *names: str) -> None:
        entries = {e.name: e for e in devstack.app_processes(self.env)}
        for name in names:
            self.logs[name] = self.base / f"{name}.log"
            with self.logs[name].open("wb") as out:
                self.procs[name] = devstack.spawn(entries[name].argv, env=self.env, stdout=out)

    def stop(self, *names: str) -> None:
        devstack.stop_groups([self.procs.pop(n) for n in names if n in self.procs])

    def log(self, name: str) -> str:
        return self.logs[name].read_text(errors="replace")

    def wait_for(self, what: str, ok: Callable[[], bool], seconds: float) -> float:
        """Seconds it took until ``ok()``; fails with the logs after ``seconds``."""
        started = time.monotonic()
        while not ok():
            if time.monotonic() - started > seconds:
                tails = "\n".join(f"--- {n}\n{devstack.log_tail(p)}" for n, p in self.logs.items())
                pytest.fail(f"{what} not seen within {seconds} s\n{tails}")
            time.sleep(0.2)
        return time.monotonic() - started

    def get(self, path: str) -> requests.Response:
        return requests.get(self.url + path, timeout=30)

    def ready(self) -> requests.Response | None:
        """/readyz, or None while web is not answering yet (still starting,
        or its first request is slow on a loaded machine)."""
        try:
            return requests.get(self.url + "/readyz", timeout=10)
        except requests.RequestException:
            return None


@pytest.fixture
def stack(transactional_db) -> Iterator[Stack]:
    base = Path(tempfile.mkdtemp(prefix="fq-stack-"))
    running = Stack(base)
    try:
        yield running
    finally:
        running.stop(*list(running.procs))
        shutil.rmtree(base, ignore_errors=True)


def per_process_counts(metrics_dir: Path, name: str, **labels: str) -> list[float]:
    """The value each process's file holds (one file per process and kind)."""
    values = []
    for file in sorted(metrics_dir.glob("histogram_*.db")):
        alone = Path(tempfile.mkdtemp(dir=metrics_dir.parent))
        shutil.copy(file, alone)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(alone))
        values.append(registry.get_sample_value(name, labels) or 0.0)
    return values


def test_metrics_add_up_processes_and_readiness_sees_a_dead_beat_and_worker(stack):
    on_sale(tickets=50)  # committed: the processes see it
    stack.start("web", "worker", "beat")
    stack.wait_for("/readyz 200", lambda: (r := stack.ready()) is not None and r.ok, 90)

    # Requests spread over both web workers; one scrape counts all of them.
    with ThreadPoolExecutor(4) as pool:
        statuses = list(pool.map(lambda _: stack.get("/" + ROUTE).status_code, range(40)))
    assert statuses == [200] * 40
    body = stack.get("/metrics").text
    families = {f.name: f for f in text_string_to_metric_families(body)}
    labels = {"method": "GET", "route": ROUTE, "status": "200"}
    [served] = [
        s.value
        for s in families["fairqueue_http_request_duration_seconds"].samples
        if s.name.endswith("_count") and s.labels == labels
    ]
    assert served == 40
    by_process = [
        v
        for v in per_process_counts(
            stack.metrics_dir, "fairqueue_http_request_duration_seconds_count", **labels
        )
        if v
    ]
    assert len(by_process) == 2 and sum(by_process) == 40, by_process
    ticks = [
        s.value
        for s in families["fairqueue_task_duration_seconds"].samples
        if s.name.endswith("_count") and s.labels == {"task": "queueing.tasks.admission_tick"}
    ]
    assert ticks and ticks[0] >= 1  # timed in the Celery worker, read by web

    # Per-task chatter is DEBUG: absent from the INFO logs of worker and beat.
    assert " succeeded in " not in stack.log("worker")
    assert "] received" not in stack.log("worker")
    assert "Sending due task" not in stack.log("beat")

    assert probe.main(["heartbeat", str(stack.heartbeats / "worker"), "--max-age", "10"]) == 0
    assert probe.main(["heartbeat", str(stack.heartbeats / "beat"), "--max-age", "10"]) == 0
    assert probe.main(["http", stack.url + "/healthz"]) == 0

    stack.stop("beat")
    stack.wait_for(
        "/readyz 503 after beat died",
        lambda: (r := stack.ready()) is not None and r.status_code == 503,
        3 * TICK_SECONDS + 10,
    )
    checks = stack.get("/readyz").json()["checks"]
    assert checks["admission"].startswith("error: no admission tick"), checks
    assert checks["workers"] == "ok"
    assert probe.main(["http", stack.url + "/readyz"]) == 1
    assert probe.main(["heartbeat", str(stack.heartbeats / "beat"), "--max-age", "0.5"]) == 1

    stack.stop("worker")
    stack.wait_for(
        "no worker",
        lambda: stack.get("/readyz").json()["checks"]["workers"].startswith("error"),
        15,
    )
    assert stack.get("/healthz").status_code == 200  # liveness is not readiness
