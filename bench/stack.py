"""The whole system, started by the benchmark itself (``--launch-stack``).

The same processes as ``make run`` (taken from ``devtools.devstack.app_processes``,
so the commands cannot drift apart), with one difference: ``make run`` stops
everything when one process dies, which is right for development but makes
"kill the worker and watch it heal" impossible. Here each process is our child
in its own process group, so a fault scenario can SIGKILL one and start it
again, and Redis is a redis-server we own, so it can be stopped and restarted
empty on the same port.

PostgreSQL: ``DATABASE_URL`` if set, else the embedded one (as ``make run``),
in a directory under ``bench/out/``.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench.production_env import production_env
from devtools import devstack

REPO_ROOT = Path(__file__).resolve().parent.parent


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(  # noqa: S603
        [sys.executable, str(REPO_ROOT / "manage.py"), *args],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"manage.py {args[0]} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def check_invariants(env: dict[str, str], event_id: str, *flags: str) -> dict:
    """``manage.py check_invariants --json`` for one event: its report, whether
    it passed (exit status 0) or found a violation (1)."""
    command = ["check_invariants", "--json", "--event", event_id, *flags]
    result = subprocess.run(  # noqa: S603
        [sys.executable, str(REPO_ROOT / "manage.py"), *command],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode not in (0, 1):
        raise SystemExit(f"manage.py check_invariants failed:\n{result.stdout}\n{result.stderr}")
    return json.loads(result.stdout)


# Production mode (DEBUG off: Django keeps no query log, serves no debug
# pages), and timings shorter than production so a sale with abandoning
# customers finishes in minutes. Printed with the results; --stack-env
# overrides any of them.
BENCH_STACK_ENV = {
    "DJANGO_DEBUG": "false",
    "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
    "CLAIM_TTL_SECONDS": "60",
    "EXPIRY_INTERVAL_SECONDS": "10",
    "RECONCILE_INTERVAL_SECONDS": "10",
    "PAYMENT_STALE_SECONDS": "20",
    "LOG_LEVEL": "WARNING",
}


@dataclass
class Child:
    name: str
    argv: list[str]
    proc: subprocess.Popen | None = None
    restarts: int = 0


@dataclass
class LocalStack:
    out_dir: Path
    env_overrides: dict[str, str] = field(default_factory=dict)
    web_workers: int = 2
    children: dict[str, Child] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    redis_port: int = 0
    redis_proc: subprocess.Popen | None = None
    pg: devstack.Postgres | None = None
    log_path: Path | None = None

    # --- ports and urls -------------------------------------------------------------
    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.env['PORT']}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.env['WS_PORT']}"

    @property
    def sandbox_url(self) -> str:
        return f"http://127.0.0.1:{self.env['SANDBOX_PORT']}"

    # --- lifecycle --------------------------------------------------------------------
    def start(self) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.out_dir / "stack.log"
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        env["PYTHONUNBUFFERED"] = "1"
        if not env.get("DATABASE_URL"):
            self.pg = devstack.Postgres(
                self.out_dir / "pg", self.out_dir / "postgres.log", throwaway=False
            )
            # SignalWatch installs handlers that only record signals: put
            # ours back, so Ctrl-C still stops the benchmark.
            saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
            self.pg.start(devstack.SignalWatch())
            for sig, handler in saved.items():
                signal.signal(sig, handler)
            env["DATABASE_URL"] = self.pg.url()
        self.redis_port = devstack.free_port()
        env["REDIS_URL"] = f"redis://127.0.0.1:{self.redis_port}/0"
        self.redis_start()
        for name in ("PORT", "WS_PORT", "SANDBOX_PORT"):
            env[name] = str(devstack.free_port())
        env["PAYSTACK_BASE_URL"] = f"http://127.0.0.1:{env['SANDBOX_PORT']}"
        env["PUBLIC_BASE_URL"] = f"http://127.0.0.1:{env['PORT']}"
        env["SANDBOX_WEBHOOK_URL"] = f"http://127.0.0.1:{env['PORT']}/api/v1/webhooks/paystack/"
        env.setdefault("SANDBOX_CONTROL_TOKEN", secrets.token_urlsafe(24))
        env["WEB_CONCURRENCY"] = str(self.web_workers)
        env.update({**BENCH_STACK_ENV, **self.env_overrides})
        production_env(env)
        self.env = env
        self.manage("migrate", "--noinput")
        for entry in devstack.app_processes(env):
            if entry.needs_module and not devstack.module_runnable(entry.needs_module):
                print(f"stack: {entry.needs_module} missing, not starting {entry.name}")
                continue
            self.children[entry.name] = Child(entry.name, list(entry.argv))
            self.spawn(entry.name)
        self.wait_healthy(timeout=90)

    def spawn(self, name: str) -> None:
        child = self.children[name]
        assert self.log_path is not None
        with self.log_path.open("ab") as log:
            log.write(f"---- bench: starting {name}\n".encode())
            child.proc = subprocess.Popen(  # noqa: S603 - argv from devstack.app_processes
                child.argv,
                env=self.env,
                cwd=REPO_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                process_group=0,
                preexec_fn=devstack._die_with_parent(signal.SIGTERM),
            )

    def manage(self, *args: str) -> str:
        result = subprocess.run(  # noqa: S603
            [sys.executable, str(REPO_ROOT / "manage.py"), *args],
            env=self.env,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"manage.py {args[0]} failed:\n{result.stdout}\n{result.stderr}")
        return result.stdout

    def wait_healthy(self, *, timeout: float) -> float:
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if healthz_ok(self.http_url):
                return time.monotonic() - started
            for child in self.children.values():
                if child.proc is not None and child.proc.poll() is not None:
                    raise RuntimeError(
                        f"{child.name} exited ({child.proc.returncode}); see {self.log_path}"
                    )
            time.sleep(0.2)
        raise RuntimeError(f"stack not healthy after {timeout} s; see {self.log_path}")

    def stop(self) -> None:
        procs = [c.proc for c in self.children.values() if c.proc is not None]
        devstack.stop_groups(procs)
        self.redis_stop()
        if self.pg is not None:
            self.pg.stop()

    # --- process faults ----------------------------------------------------------------
    def kill(self, name: str, sig: int = signal.SIGKILL) -> int:
        """Signal a child's whole process group (main process and its pool)."""
        child = self.children[name]
        assert child.proc is not None
        os.killpg(child.proc.pid, sig)
        child.proc.wait()
        return child.proc.pid

    def restart(self, name: str) -> None:
        self.children[name].restarts += 1
        self.spawn(name)

    def cpu_roots(self) -> dict[str, int]:
        """The root process of each part of the stack (its CPU includes its
        children's: granian's workers, Celery's pool, Postgres' backends)."""
        roots = {n: c.proc.pid for n, c in self.children.items() if c.proc is not None}
        if self.redis_proc is not None:
            roots["redis"] = self.redis_proc.pid
        if self.pg is not None:
            for pidfile in self.pg.data_dir.rglob("postmaster.pid"):
                roots["postgres"] = int(pidfile.read_text().split()[0])
        return roots

    def web_worker_pids(self) -> list[int]:
        proc = self.children["web"].proc
        return children_of(proc.pid) if proc is not None else []

    # --- Redis -------------------------------------------------------------------------
    def redis_start(self) -> None:
        server = devstack.Redis(self.out_dir / "redis", self.out_dir / "redis.log")
        server.prepare()
        with (self.out_dir / "redis.log").open("ab") as log:
            self.redis_proc = subprocess.Popen(  # noqa: S603
                [str(a) for a in server.argv(self.redis_port)],
                cwd=self.out_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                process_group=0,
                preexec_fn=devstack._die_with_parent(signal.SIGTERM),
            )
        server.port = self.redis_port
        deadline = time.monotonic() + 20
        while not server.is_ready():
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)

    def redis_stop(self) -> None:
        if self.redis_proc is not None and self.redis_proc.poll() is None:
            os.killpg(self.redis_proc.pid, signal.SIGKILL)
            self.redis_proc.wait()
        self.redis_proc = None


def _proc_stats() -> Iterator[tuple[int, list[str]]]:
    """(pid, fields of /proc/<pid>/stat after "pid (comm)") of every process
    (Linux). comm may hold spaces and parentheses: split after the last ')'."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        yield int(entry.name), raw[raw.rindex(")") + 2 :].split()


def children_of(pid: int) -> list[int]:
    return sorted(child for child, fields in _proc_stats() if int(fields[1]) == pid)


def process_tree_cpu(roots: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far of each named process and all its descendants. A
    child that exited and was reaped is counted too: its time is in its
    parent's cutime/cstime."""
    tick = os.sysconf("SC_CLK_TCK")
    own: dict[int, float] = {}
    children: dict[int, list[int]] = defaultdict(list)
    for pid, fields in _proc_stats():
        own[pid] = sum(int(x) for x in fields[11:15]) / tick  # utime..cstime
        children[int(fields[1])].append(pid)
    totals = {}
    for name, root in roots.items():
        total, todo = 0.0, [root]
        while todo:
            pid = todo.pop()
            total += own.get(pid, 0.0)
            todo.extend(children.get(pid, []))
        totals[name] = total
    return totals


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def healthz_ok(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/healthz", timeout=2) as resp:  # noqa: S310
            return resp.status == 200
    except OSError:
        return False
