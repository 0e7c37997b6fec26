"""Several of every process of ``make run`` on one Postgres and one Redis:
the processes are the devstack's own (``devtools.devstack.app_processes``:
whatever HTTP server, socket server and worker command ``make run`` uses),
each on its own port, its output in its own log file."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from devtools import devstack
from devtools.devstack.system import app_processes
from tests.support.processes import healthz_ok


@dataclass
class Member:
    name: str  # e.g. web-1
    proc: subprocess.Popen[bytes]
    log: Path
    port: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        """SIGKILL to its whole process group (a gunicorn master and its
        workers, a Celery worker and its pool): a crash, nothing cleaned up."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


@dataclass
class Fleet:
    directory: Path
    env: dict[str, str]
    members: list[Member] = field(default_factory=list)

    def _argv(self, kind: str, port: int) -> list[str]:
        env = {**self.env, "PORT": str(port), "WS_PORT": str(port), "SANDBOX_PORT": "1"}
        [process] = [p for p in app_processes(env) if p.name == kind]
        return list(process.argv)

    def start(self, kind: str, index: int, *extra: str) -> Member:
        """One more ``kind`` process (web, ws, worker, beat) of ``make run``."""
        port = devstack.free_port() if kind in ("web", "ws") else None
        argv = [*self._argv(kind, port or 1), *extra]
        name = f"{kind}-{index}"
        log = self.directory / f"{name}.log"
        with log.open("wb") as out:
            proc = devstack.spawn(argv, env=self.env, stdout=out)
        member = Member(name, proc, log, port)
        self.members.append(member)
        return member

    def wait_listening(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        for member in self.members:
            if member.port is None:
                continue
            while not healthz_ok(member.url):
                assert member.proc.poll() is None and time.monotonic() < deadline, (
                    f"{member.name} did not start:\n{devstack.log_tail(member.log)}"
                )
                time.sleep(0.2)

    def alive(self, member: Member) -> bool:
        return member.proc.poll() is None

    def stop(self) -> None:
        devstack.stop_groups([m.proc for m in self.members if m.proc.poll() is None])

    def logs(self) -> str:
        return "\n".join(f"--- {m.name}\n{devstack.log_tail(m.log)}" for m in self.members)
