"""`make run` prints its banner only once every process listens, and the
banner names the sandbox and the database and Redis URLs."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from devtools import devstack
from devtools.devstack.services import Stack
from devtools.devstack.system import AppProcess, banner, demo_from, pump_output, wait_until_ready
from tests.support.processes import child_env


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


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_banner_comes_within_seconds_of_beat_starting():
    """Beat as `make run` starts it (the project's logging, which turns its
    per-tick lines down) says the line the launcher waits for: no 120 s wait,
    no "still not ready" warning."""
    env = child_env(LOG_LEVEL="INFO", PORT="1", WS_PORT="1", SANDBOX_PORT="1")
    [beat] = [e for e in devstack.app_processes(env) if e.name == "beat"]
    assert beat.ready_line is not None
    proc = devstack.spawn(beat.argv, env=env, stdout=subprocess.PIPE)
    ready = {"beat": threading.Event()}
    threading.Thread(
        target=pump_output,
        args=("beat", 4, proc.stdout, threading.Lock(), (beat.ready_line, ready["beat"])),
        daemon=True,
    ).start()
    try:
        started = time.monotonic()
        late = wait_until_ready([beat], {"beat": proc}, ready, Stack(), NoStopSignal(), timeout=30)
        waited = time.monotonic() - started
    finally:
        devstack.stop_groups([proc])
    assert late == [] and waited < 20, waited


def test_the_banner_names_every_address_and_the_services():
    env = {
        "PORT": "8000",
        "WS_PORT": "8001",
        "SANDBOX_PORT": "8002",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5555/fairqueue",
        "REDIS_URL": "redis://127.0.0.1:6666/0",
    }
    demo = demo_from(
        "event b7f0c3d2-0000-0000-0000-000000000000\nadmin $DEMO_ADMIN_PASSWORD\n"
        "organizer Zq3-fresh-one\n"
    )

    text = banner(env, Stack(), demo)

    assert "http://localhost:8000/events/b7f0c3d2-0000-0000-0000-000000000000/queue/" in text
    assert "sandbox gateway  http://localhost:8002/" in text
    assert "ws://localhost:8001/ws/events/" in text
    assert "/api/docs/" in text and "/api/redoc/" in text
    assert "postgres://postgres@127.0.0.1:5555/fairqueue  (from DATABASE_URL)" in text
    assert "redis://127.0.0.1:6666/0  (from REDIS_URL)" in text
    assert "admin / $DEMO_ADMIN_PASSWORD" in text
    assert "organizer / Zq3-fresh-one" in text
    assert "sign-in codes    printed here, in the web lines" in text
    assert "on your LAN      off: this machine only (RUN_ON_LAN=1 serves it)" in text
    with_mail = banner({**env, "EMAIL_URL": "smtp://mail:25"}, Stack(), demo)
    assert "sign-in codes" not in with_mail  # they go by email then


def listening_hosts(env: dict[str, str]) -> dict[str, str]:
    hosts = {}
    for entry in devstack.app_processes(env):
        for arg in entry.argv:
            if arg.startswith(("--host=", "--bind=")):
                hosts[entry.name] = arg.split("=", 1)[1]
    return hosts


def test_make_run_serves_this_machine_only_unless_told_to_serve_the_lan():
    env = {"PORT": "8000", "WS_PORT": "8001", "SANDBOX_PORT": "8002"}
    loopback = {"web": "127.0.0.1", "ws": "127.0.0.1", "sandbox": "127.0.0.1"}
    assert listening_hosts(env) == loopback
    assert listening_hosts({**env, "RUN_ON_LAN": "0"}) == loopback
    everywhere = {"web": "0.0.0.0", "ws": "0.0.0.0", "sandbox": "0.0.0.0"}  # noqa: S104
    assert listening_hosts({**env, "RUN_ON_LAN": "1"}) == everywhere
    assert listening_hosts({**env, "RUN_ON_LAN": "true"}) == everywhere


def signs_in(login: str, password: str) -> bool:
    return get_user_model().objects.get(username=login).check_password(password)


@pytest.mark.django_db
def test_bootstrap_demo_quiet_prints_the_demo_event_and_fresh_random_passwords(
    monkeypatch, settings
):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast here
    monkeypatch.delenv("DEMO_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("DEMO_ORGANIZER_PASSWORD", raising=False)
    runs = []
    for _ in range(2):
        out = StringIO()
        call_command("bootstrap_demo", "--quiet", stdout=out)
        runs.append(demo_from(out.getvalue()))
    first, second = runs
    assert set(first) == {"event", "admin", "organizer"}
    assert len(first["event"]) == 36 and first["event"] == second["event"]  # made once
    for login in ("admin", "organizer"):
        assert len(first[login]) >= 16 and first[login] != second[login]  # fresh each run
        assert signs_in(login, second[login])
        assert not signs_in(login, first[login])
        assert not signs_in(login, login)  # no admin/admin


@pytest.mark.django_db
def test_a_demo_password_given_in_the_environment_is_used_and_not_echoed(monkeypatch, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast here
    given = "a-password-of-my-own-42"
    monkeypatch.setenv("DEMO_ADMIN_PASSWORD", given)
    monkeypatch.delenv("DEMO_ORGANIZER_PASSWORD", raising=False)
    out = StringIO()
    call_command("bootstrap_demo", "--quiet", stdout=out)
    demo = demo_from(out.getvalue())
    assert demo["admin"] == "$DEMO_ADMIN_PASSWORD" and given not in out.getvalue()
    assert signs_in("admin", given)
