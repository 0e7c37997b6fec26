"""What the rest of devstack stands on: its two errors, its log lines, SignalWatch (stop
signals recorded, not raised), and child processes: spawned so that they die with us, stopped
group by group (a signal, then SIGKILL after STOP_TIMEOUT), or run in the foreground."""

from __future__ import annotations

import ctypes
import os
import pwd
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

REPO_ROOT = Path(__file__).resolve().parents[2]
STOP_TIMEOUT = 10.0  # seconds between SIGTERM and SIGKILL
FORWARD_GRACE = 5.0  # seconds a foreground command gets to react to the terminal's Ctrl-C
PR_SET_PDEATHSIG = 1


class StartupError(Exception):
    """An embedded service or a setup step failed; the message says why."""


class Interrupted(Exception):
    """A stop signal arrived before the stack was up."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def log(message: str) -> None:
    write_line(sys.stderr, f"devstack | {message}")


def write_line(stream: IO[str], line: str) -> None:
    """Write and flush; a closed terminal or pipe (`make run | tee`, then Ctrl-C) must not
    stop us halfway through shutting down."""
    try:
        stream.write(line + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass


class SignalWatch:
    """Records SIGINT/SIGTERM/SIGHUP instead of raising, so every loop stops in order."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.first_at = 0.0
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._record)

    def _record(self, signum: int, _frame: object) -> None:
        if self.signum is None:
            self.first_at = time.monotonic()
        if self.signum is None or signum != signal.SIGINT:
            self.signum = signum

    def check(self) -> None:
        if self.signum is not None:
            raise Interrupted(self.signum)


def _die_with_parent(sig: int) -> Callable[[], None] | None:
    """A preexec hook asking Linux to send `sig` to the child when this process dies."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def hook() -> None:
        libc.prctl(PR_SET_PDEATHSIG, sig)
        if os.getppid() != parent:  # we died before prctl took effect
            os.kill(os.getpid(), sig)

    return hook


def spawn(
    argv: Sequence[str | Path],
    *,
    env: dict[str, str],
    stdout: int | IO[bytes] | None = None,
    own_group: bool = True,
    as_user: pwd.struct_passwd | None = None,
    die_signal: int = signal.SIGTERM,
    cwd: Path = REPO_ROOT,
) -> subprocess.Popen[bytes]:
    """Start a child: its own process group unless told otherwise, and it dies with us."""
    return subprocess.Popen(  # noqa: S603 - argv built here, never from a shell string
        [str(a) for a in argv],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL if own_group else None,
        stdout=stdout,
        stderr=subprocess.STDOUT if stdout is not None else None,
        process_group=0 if own_group else None,
        preexec_fn=_die_with_parent(die_signal),  # forks happen before any thread starts
        **user_kwargs(as_user),
    )


def user_kwargs(user: pwd.struct_passwd | None) -> dict[str, Any]:
    """subprocess arguments that run a child as `user`, without our supplementary groups."""
    if user is None:
        return {}
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def run_quiet(argv: Sequence[str | Path], *, env: dict[str, str], **kwargs: Any) -> int:
    """Run a helper binary to completion (no output unless redirected); return its code."""
    result = subprocess.run(  # noqa: S603 - argv built here, never from a shell string
        [str(a) for a in argv], env=env, check=False, **kwargs
    )
    return result.returncode


def exit_status(returncode: int) -> int:
    """Popen's -N (killed by signal N) becomes the shell's 128+N."""
    return returncode if returncode >= 0 else 128 - returncode


def run_foreground(argv: Sequence[str], env: dict[str, str], watch: SignalWatch) -> int:
    """Run a command in our process group, so it keeps the terminal (pdb, Ctrl-C).

    The terminal's Ctrl-C reaches it directly; SIGTERM/SIGHUP sent to us are forwarded. If it
    still runs FORWARD_GRACE s after a SIGINT (e.g. `kill -INT` on us alone) it gets SIGTERM,
    and STOP_TIMEOUT s after that SIGKILL.
    """
    try:
        proc = spawn(argv, env=env, own_group=False)
    except OSError as exc:
        log(f"cannot run {argv[0]}: {exc}")
        return 127 if isinstance(exc, FileNotFoundError) else 126  # as a shell would
    forwarded_at: float | None = None
    while True:
        try:
            return exit_status(proc.wait(timeout=0.2))
        except subprocess.TimeoutExpired:
            pass
        if watch.signum is None:
            continue
        now = time.monotonic()
        if forwarded_at is None:
            if watch.signum != signal.SIGINT:
                proc.send_signal(watch.signum)
                forwarded_at = now
            elif now - watch.first_at > FORWARD_GRACE:
                proc.terminate()
                forwarded_at = now
        elif now - forwarded_at > STOP_TIMEOUT:
            proc.kill()


def signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to a process group; False if the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # the id now belongs to someone else's processes: ours are gone
        return False
    return True


def stop_groups(procs: Sequence[subprocess.Popen[bytes]], sig: int = signal.SIGTERM) -> None:
    """Signal each child's process group, wait up to STOP_TIMEOUT, then SIGKILL what is left."""
    for proc in procs:
        signal_group(proc.pid, sig)
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline:
        leaders = [p for p in procs if p.poll() is None]
        if not leaders and not any(signal_group(p.pid, 0) for p in procs):
            return
        time.sleep(0.1)
    for proc in procs:
        if signal_group(proc.pid, signal.SIGKILL):
            log(f"process group {proc.pid} outlived {signal.Signals(sig).name}: SIGKILL sent")
    for proc in procs:
        proc.wait()
