"""`make run` prints its banner only once every process listens, and the
banner names the sandbox and the database and Redis URLs."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from io import StringIO

import pytest
from django.core.management import call_command

from devtools import devstack
from devtools.devstack.services import Stack
from devtools.devstack.system import AppProcess, banner, pump_output, wait_until_ready


class NoStopSignal:
    """SignalWatch without taking over the test process' signal handlers."""

    signum = None

    def check(self) -> None:
        pass


@pytest.mark.slow
def test_the_banner_waits_for_a_port_that_opens_late_and_for_a_ready_line():
    port = devstack.free_port()
    late_listener = (
        "import socket, time; s = socket.socket(); time.sleep(1.5); "
        f"s.bind(('127.0.0.1', {port})); s.listen(); time.sleep(30)"
    )
    late_line = "import time; time.sleep(1.0); print('celery@x ready.', flush=True); time.sleep(30)"
    procs = {
        "web": subprocess.Popen([sys.executable, "-c", late_listener]),  # noqa: S603
        "worker": subprocess.Popen(  # noqa: S603
            [sys.executable, "-c", late_line], stdout=subprocess.PIPE
        ),
    }
    entries = [
        AppProcess("web", [], port=port),
        AppProcess("worker", [], ready_line=" ready."),
    ]
    ready = {"web": threading.Event(), "worker": threading.Event()}
    threading.Thread(
        target=pump_output,
        args=("worker", 6, procs["worker"].stdout, threading.Lock(), (" ready.", ready["worker"])),
        daemon=True,
    ).start()
    try:
        started = time.monotonic()
        late = wait_until_ready(entries, procs, ready, Stack(), NoStopSignal(), timeout=20)
        waited = time.monotonic() - started
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()
    assert late == []
    assert waited >= 1.4  # not before the late port listened


def test_the_banner_names_every_address_and_the_services():
    env = {
        "PORT": "8000",
        "WS_PORT": "8001",
        "SANDBOX_PORT": "8002",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5555/fairqueue",
        "REDIS_URL": "redis://127.0.0.1:6666/0",
        "DEMO_ADMIN_PASSWORD": "s3cret",
    }

    text = banner(env, Stack(), "b7f0c3d2-0000-0000-0000-000000000000")

    assert "http://localhost:8000/events/b7f0c3d2-0000-0000-0000-000000000000/queue/" in text
    assert "sandbox gateway  http://localhost:8002/" in text
    assert "ws://localhost:8001/ws/events/" in text
    assert "/api/docs/" in text and "/api/redoc/" in text
    assert "postgres://postgres@127.0.0.1:5555/fairqueue  (from DATABASE_URL)" in text
    assert "redis://127.0.0.1:6666/0  (from REDIS_URL)" in text
    assert "admin / $DEMO_ADMIN_PASSWORD" in text and "s3cret" not in text
    assert "organizer / organizer" in text


@pytest.mark.django_db
def test_bootstrap_demo_quiet_prints_only_the_demo_event():
    out = StringIO()
    call_command("bootstrap_demo", "--quiet", stdout=out)
    lines = out.getvalue().split()
    assert len(lines) == 1 and len(lines[0]) == 36  # the demo event's id
