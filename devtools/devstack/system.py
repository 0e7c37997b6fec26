"""The application processes of `run` (web, ws, worker, beat, sandbox): migrate and load the
demo data, start them with their output prefixed by name, and stop everything when a signal
arrives or any of them (or an embedded service) dies. Also the wait of `services`."""

from __future__ import annotations

import contextlib
import fcntl
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from devtools.devstack.processes import (
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
from devtools.devstack.services import Stack, log_tail
from fairqueue.webserver import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_WORKERS,
    web_argv,
)

MANAGE_PY = REPO_ROOT / "manage.py"
READY_TIMEOUT = 120.0  # seconds the banner waits for every process to listen
LOOPBACK = "127.0.0.1"
ALL_INTERFACES = "0.0.0.0"  # noqa: S104 - only with RUN_ON_LAN, as documented
# `make run` serves this machine only; RUN_ON_LAN=1 serves the local network too
# (a phone on the same Wi-Fi), with the demo's random passwords.
LAN_SWITCH = "RUN_ON_LAN"


def on_lan(env: dict[str, str]) -> bool:
    return env.get(LAN_SWITCH, "").strip().lower() in ("1", "true", "yes", "on")


def serving_host(env: dict[str, str]) -> str:
    """The address web, ws and the sandbox listen on."""
    return ALL_INTERFACES if on_lan(env) else LOOPBACK


@dataclass(frozen=True)
class AppProcess:
    name: str
    argv: list[str]
    needs_module: str | None = None  # skipped, with a warning, while this module is missing
    # Ready when this TCP port on 127.0.0.1 accepts a connection, or when a
    # line of the process' output contains `ready_line` (workers listen on nothing).
    port: int | None = None
    ready_line: str | None = None


def app_processes(env: dict[str, str]) -> list[AppProcess]:
    """Everything `make run` starts after migrations: add or remove entries here."""
    py = sys.executable
    celery = [py, "-m", "celery", "--app=config"]
    host = serving_host(env)
    return [
        AppProcess(
            "web",
            web_argv(host=host, port=int(env["PORT"]),
                     workers=int(env.get("WEB_CONCURRENCY", DEFAULT_WORKERS)),
                     max_connections=int(env.get("WEB_MAX_CONNECTIONS", DEFAULT_MAX_CONNECTIONS))),
            port=int(env["PORT"]),
        ),
        AppProcess(
            "ws",
            [py, "-m", "daphne", f"--bind={host}", f"--port={env['WS_PORT']}",
             "config.asgi:application"],
            port=int(env["WS_PORT"]),
        ),
        AppProcess("worker", [*celery, "worker", "--loglevel=INFO"], ready_line=" ready."),
        AppProcess(
            "beat",
            [*celery, "beat", "--loglevel=INFO",
             "--scheduler=django_celery_beat.schedulers:DatabaseScheduler"],
            ready_line="beat: Starting",
        ),
        AppProcess(
            "sandbox",
            # Where web and ws listen: a phone on the LAN pays there (its
            # checkout pages follow the host the customer used).
            [py, "-m", "devtools.sandbox", f"--host={env.get('SANDBOX_HOST', host)}",
             f"--port={env['SANDBOX_PORT']}"],
            needs_module="devtools.sandbox",
            port=int(env["SANDBOX_PORT"]),
        ),
    ]  # fmt: skip


def point_at_each_other(env: dict[str, str], *, with_sandbox: bool) -> None:
    """Point the pieces at each other when PORT / SANDBOX_PORT are not the
    defaults (PUBLIC_BASE_URL stays unset: payment callbacks follow the host
    the customer used), and give the sandbox's control API (it can mark any
    payment paid) a fresh token per run unless one is given; the banner shows it."""
    if not with_sandbox:
        return
    env.setdefault("PAYSTACK_BASE_URL", f"http://127.0.0.1:{env['SANDBOX_PORT']}")
    env.setdefault(
        "SANDBOX_WEBHOOK_URL", f"http://127.0.0.1:{env['PORT']}/api/v1/webhooks/paystack/"
    )
    env.setdefault("SANDBOX_CONTROL_TOKEN", secrets.token_urlsafe(24))
    # Payments go to the sandbox: every page says so (PAYMENTS_SANDBOX's banner).
    env.setdefault("PAYMENTS_SANDBOX", "true")
    # The bot challenge (off unless CHALLENGE_PROVIDER is set) checks tokens
    # with the sandbox's test verifier and widget, never Cloudflare's.
    env.setdefault(
        "CHALLENGE_VERIFY_URL", f"http://127.0.0.1:{env['SANDBOX_PORT']}/challenge/siteverify"
    )
    env.setdefault(
        "CHALLENGE_SCRIPT_URL", f"http://localhost:{env['SANDBOX_PORT']}/challenge/api.js"
    )


def module_runnable(module: str) -> bool:
    """Whether `python -m module` would find it in the repo (checked without importing)."""
    path = REPO_ROOT.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__main__.py").is_file()


def metrics_dir(env: dict[str, str]) -> Path:
    """One prometheus-client multiprocess directory for every process of the
    run, emptied first (values of a previous run's processes must not be
    summed in), so /metrics on the web port counts web, ws, worker and beat."""
    path = Path(env.get("PROMETHEUS_MULTIPROC_DIR") or REPO_ROOT / ".fairqueue" / "metrics")
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    env["PROMETHEUS_MULTIPROC_DIR"] = str(path)
    return path


def pump_output(
    name: str,
    width: int,
    stream: IO[bytes],
    lock: threading.Lock,
    ready: tuple[str, threading.Event] | None = None,
) -> None:
    """Copy a child's output to ours line by line, each line prefixed with `name |`;
    set `ready`'s event when a line contains its text."""
    prefix = f"{name:<{width}} | "
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace").rstrip("\n")
        if ready is not None and ready[0] in line:
            ready[1].set()
        with lock:  # keeps reading even if our stdout is gone, so the child never blocks
            write_line(sys.stdout, prefix + line)


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


SIOCGIFADDR = 0x8915  # Linux: an interface's IPv4 address


def lan_addresses() -> list[str]:
    """This machine's non-loopback IPv4 addresses: its interfaces' (Linux), else
    what its host name resolves to. Nothing is sent anywhere."""
    found: set[str] = set()
    if sys.platform.startswith("linux"):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            for _, name in socket.if_nameindex():
                try:
                    packed = fcntl.ioctl(
                        sock.fileno(), SIOCGIFADDR, struct.pack("256s", name[:15].encode())
                    )
                except OSError:  # no IPv4 address on this interface
                    continue
                found.add(socket.inet_ntoa(packed[20:24]))
    if not found:
        with contextlib.suppress(OSError):
            found.update(socket.gethostbyname_ex(socket.gethostname())[2])
    return sorted(a for a in found if not a.startswith("127."))


def demo_from(output: str) -> dict[str, str]:
    """What `bootstrap_demo --quiet` printed: ``event <id>`` and each login's
    ``<login> <password>``."""
    return dict(line.split(" ", 1) for line in output.strip().splitlines() if " " in line)


def banner(env: dict[str, str], stack: Stack, demo: dict[str, str]) -> str:
    """What `make run` prints once every process listens."""
    port, ws_port, sandbox_port = env["PORT"], env["WS_PORT"], env["SANDBOX_PORT"]
    site = f"http://localhost:{port}"
    embedded = {server.env_var for server in stack.servers}
    lines = [
        "",
        "FairQueue is running (every process listens). Ctrl-C stops everything.",
        f"  site             {site}/",
    ]
    if on_lan(env):
        lines += [f"  on your LAN      http://{address}:{port}/" for address in lan_addresses()]
    else:
        lines.append(f"  on your LAN      off: this machine only ({LAN_SWITCH}=1 serves it)")
    if demo.get("event"):
        lines.append(f"  demo sale        {site}/events/{demo['event']}/queue/")
    lines += [
        f"  admin            {site}/admin/",
        f"                   superuser: admin / {demo.get('admin', '?')}",
        f"                   organizer: organizer / {demo.get('organizer', '?')}",
    ]
    if not {"EMAIL_URL", "EMAIL_BACKEND"} & env.keys():  # Django's console backend
        lines.append("  sign-in codes    printed here, in the web lines (no email is sent)")
    lines += [
        f"  API docs         {site}/api/docs/  (ReDoc: {site}/api/redoc/)",
        f"  health           {site}/healthz",
        f"  WebSocket        ws://localhost:{ws_port}/ws/events/<event_id>/queue/",
        f"  sandbox gateway  http://localhost:{sandbox_port}/  (checkout pages; no real money)",
    ]
    if env.get("SANDBOX_CONTROL_TOKEN"):
        lines.append(
            f"  sandbox control  http://localhost:{sandbox_port}/_sandbox/  "
            f"header X-Sandbox-Token: {env['SANDBOX_CONTROL_TOKEN']}"
        )
    for var, label in (("DATABASE_URL", "PostgreSQL"), ("REDIS_URL", "Redis")):
        origin = "embedded" if var in embedded else f"from {var}"
        lines.append(f"  {label:<16} {env[var]}  ({origin})")
    lines.append("")
    return "\n".join(lines)


def wait_until_ready(
    entries: list[AppProcess],
    procs: dict[str, subprocess.Popen[bytes]],
    ready_lines: dict[str, threading.Event],
    stack: Stack,
    watch: SignalWatch,
    timeout: float = READY_TIMEOUT,
) -> list[str]:
    """Wait until each process listens (its port) or says it is ready (its line).
    Returns the names still not ready at the timeout; raises StartupError if one dies."""
    deadline = time.monotonic() + timeout
    pending = [e for e in entries if e.port is not None or e.ready_line is not None]
    while pending and time.monotonic() < deadline:
        watch.check()
        for entry in pending:
            if procs[entry.name].poll() is not None:
                raise StartupError(f"{entry.name} exited with code {procs[entry.name].returncode}")
        dead = stack.dead()
        if dead is not None:
            raise StartupError(f"{dead.name} died")
        pending = [
            e
            for e in pending
            if not (port_open(e.port) if e.port is not None else ready_lines[e.name].is_set())
        ]
        time.sleep(0.2)
    return [e.name for e in pending]


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

    metrics_dir(env)
    code = run_foreground([sys.executable, str(MANAGE_PY), "migrate", "--noinput"], env, watch)
    watch.check()
    if code != 0:
        raise StartupError(f"manage.py migrate failed with exit code {code}")
    demo = subprocess.run(  # noqa: S603 - argv built here
        [sys.executable, str(MANAGE_PY), "bootstrap_demo", "--quiet"],
        env=env, cwd=REPO_ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    watch.check()
    if demo.returncode != 0:
        raise StartupError(f"manage.py bootstrap_demo failed:\n{demo.stderr.strip()}")
    demo_logins = demo_from(demo.stdout)

    width = max(len(e.name) for e in entries)
    procs: dict[str, subprocess.Popen[bytes]] = {}
    readers: list[threading.Thread] = []
    lock = threading.Lock()
    try:
        for entry in entries:  # all forks happen before any reader thread exists
            procs[entry.name] = spawn(entry.argv, env=env, stdout=subprocess.PIPE)
        ready_lines = {entry.name: threading.Event() for entry in entries}
        for entry in entries:
            proc = procs[entry.name]
            ready = (entry.ready_line, ready_lines[entry.name]) if entry.ready_line else None
            reader = threading.Thread(
                target=pump_output, args=(entry.name, width, proc.stdout, lock, ready), daemon=True
            )
            reader.start()
            readers.append(reader)
        log(f"started {', '.join(procs)}; waiting until every one listens")
        late = wait_until_ready(entries, procs, ready_lines, stack, watch)
        if late:
            log(f"warning: still not ready after {READY_TIMEOUT:.0f} s: {', '.join(late)}")
        with lock:
            write_line(sys.stdout, banner(env, stack, demo_logins))
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
