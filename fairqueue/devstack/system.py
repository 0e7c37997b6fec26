"""The application processes of `run` (web, ws, worker, beat, sandbox): migrate and load the
demo data, start them with their output prefixed by name, and stop everything when a signal
arrives or any of them (or an embedded service) dies. Also the wait of `services`."""

from __future__ import annotations

import secrets
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import IO

from fairqueue.devstack.processes import (
    REPO_ROOT,
    SignalWatch,
    StartupError,
    exit_status,
    log,
    run_foreground,
    spawn,
    stop_groups,
    write_line,
)
from fairqueue.devstack.services import Stack, log_tail

MANAGE_PY = REPO_ROOT / "manage.py"
ALL_INTERFACES = "0.0.0.0"  # noqa: S104 - `make run` serves the LAN on PORT/WS_PORT, as documented


@dataclass(frozen=True)
class AppProcess:
    name: str
    argv: list[str]
    needs_module: str | None = None  # skipped, with a warning, while this module is missing


def app_processes(env: dict[str, str]) -> list[AppProcess]:
    """Everything `make run` starts after migrations: add or remove entries here."""
    py = sys.executable
    celery = [py, "-m", "celery", "--app=config"]
    return [
        AppProcess(
            "web",
            [py, "-m", "gunicorn", "config.wsgi:application", "--worker-class=sync",
             f"--bind={ALL_INTERFACES}:{env['PORT']}",
             f"--workers={env.get('WEB_CONCURRENCY', '2')}"],
        ),
        AppProcess(
            "ws",
            [py, "-m", "daphne", f"--bind={ALL_INTERFACES}", f"--port={env['WS_PORT']}",
             "config.asgi:application"],
        ),
        AppProcess("worker", [*celery, "worker", "--loglevel=INFO"]),
        AppProcess(
            "beat",
            [*celery, "beat", "--loglevel=INFO",
             "--scheduler=django_celery_beat.schedulers:DatabaseScheduler"],
        ),
        AppProcess(
            "sandbox",
            [py, "-m", "payments.sandbox", f"--port={env['SANDBOX_PORT']}"],
            needs_module="payments.sandbox",
        ),
    ]  # fmt: skip


def point_at_each_other(env: dict[str, str], *, with_sandbox: bool) -> None:
    """Point the pieces at each other when PORT / SANDBOX_PORT are not the
    defaults; give the sandbox's control API (it can mark any payment paid) a
    fresh token per run unless one is given, and say it."""
    env.setdefault("PUBLIC_BASE_URL", f"http://localhost:{env['PORT']}")
    if not with_sandbox:
        return
    env.setdefault("PAYSTACK_BASE_URL", f"http://127.0.0.1:{env['SANDBOX_PORT']}")
    env.setdefault(
        "SANDBOX_WEBHOOK_URL", f"http://127.0.0.1:{env['PORT']}/api/v1/webhooks/paystack/"
    )
    env.setdefault("SANDBOX_CONTROL_TOKEN", secrets.token_urlsafe(24))
    log(
        f"sandbox control API: http://127.0.0.1:{env['SANDBOX_PORT']}/_sandbox/ "
        f"with header X-Sandbox-Token: {env['SANDBOX_CONTROL_TOKEN']}"
    )


def module_runnable(module: str) -> bool:
    """Whether `python -m module` would find it in the repo (checked without importing)."""
    path = REPO_ROOT.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__main__.py").is_file()


def pump_output(name: str, width: int, stream: IO[bytes], lock: threading.Lock) -> None:
    """Copy a child's output to ours line by line, each line prefixed with `name |`."""
    prefix = f"{name:<{width}} | "
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace").rstrip("\n")
        with lock:  # keeps reading even if our stdout is gone, so the child never blocks
            write_line(sys.stdout, prefix + line)


def run_system(env: dict[str, str], stack: Stack, watch: SignalWatch) -> int:
    env.setdefault("PORT", "8000")
    env.setdefault("WS_PORT", "8001")
    env.setdefault("SANDBOX_PORT", "8002")
    entries = []
    for entry in app_processes(env):
        if entry.needs_module and not module_runnable(entry.needs_module):
            log(f"warning: {entry.needs_module} not found; not starting {entry.name}")
        else:
            entries.append(entry)
    point_at_each_other(env, with_sandbox=any(e.name == "sandbox" for e in entries))

    for step in (["migrate", "--noinput"], ["bootstrap_demo"]):
        code = run_foreground([sys.executable, str(MANAGE_PY), *step], env, watch)
        watch.check()
        if code != 0:
            raise StartupError(f"manage.py {step[0]} failed with exit code {code}")

    width = max(len(e.name) for e in entries)
    procs: dict[str, subprocess.Popen[bytes]] = {}
    readers: list[threading.Thread] = []
    lock = threading.Lock()
    try:
        for entry in entries:  # all forks happen before any reader thread exists
            procs[entry.name] = spawn(entry.argv, env=env, stdout=subprocess.PIPE)
        for name, proc in procs.items():
            reader = threading.Thread(
                target=pump_output, args=(name, width, proc.stdout, lock), daemon=True
            )
            reader.start()
            readers.append(reader)
        log(
            f"started {', '.join(procs)}: http://localhost:{env['PORT']}/ "
            f"(WebSockets on port {env['WS_PORT']}); Ctrl-C stops everything"
        )
        return supervise(procs, stack, watch)
    finally:
        stop_groups(list(procs.values()))
        for reader in readers:
            reader.join(timeout=2)
        log("all processes stopped")


def supervise(procs: dict[str, subprocess.Popen[bytes]], stack: Stack, watch: SignalWatch) -> int:
    """Wait for a stop signal (exit 0) or for any process to die (exit non-zero)."""
    while True:
        if watch.signum is not None:
            log(f"received {signal.Signals(watch.signum).name}; stopping")
            return 0
        for name, proc in procs.items():
            if proc.poll() is not None:
                log(f"{name} exited unexpectedly with code {proc.returncode}; stopping")
                return exit_status(proc.returncode) or 1
        server = stack.dead()
        if server is not None:
            log(
                f"{server.name} died; stopping. Last lines of {server.log_path}:\n"
                f"{log_tail(server.log_path)}"
            )
            return 1
        time.sleep(0.2)


def wait_for_stop(stack: Stack, watch: SignalWatch) -> int:
    while watch.signum is None:
        server = stack.dead()
        if server is not None:
            log(
                f"{server.name} died. Last lines of {server.log_path}:\n{log_tail(server.log_path)}"
            )
            return 1
        time.sleep(0.2)
    log(f"received {signal.Signals(watch.signum).name}; stopping")
    return 0
