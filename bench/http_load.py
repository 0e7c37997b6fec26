"""HTTP load for the waiting-room benchmarks: a server of their own (granian, or
gunicorn for comparison), where the CPU goes (server, Postgres, Redis, client),
and the load generator (wrk when installed, else a small asyncio HTTP/1.1
client in 2 processes).
"""

from __future__ import annotations

import asyncio
import importlib.util
import multiprocessing as mp
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from bench.queue_setup import ROOT
from fairqueue.webserver import web_argv

# --- the server ------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SERVERS = ("granian", "gunicorn")


def server_argv(server: str, *, port: int, workers: int, threads: int = 1) -> list[str]:
    """The HTTP server in front of config.wsgi on 127.0.0.1:port. granian is
    what `make run` and compose serve (the same flags, fairqueue/webserver.py;
    ``threads``: requests a worker runs at once, WEB_THREADS, set by server_env);
    gunicorn (sync workers, or gthread with keep-alive when threads > 1) is
    kept for the side-by-side comparison in docs/BENCHMARKS.md and is not a
    dependency: `pip install gunicorn` to run it."""
    if server == "granian":
        return web_argv(host="127.0.0.1", port=port, workers=workers, log_level="warning")
    if server != "gunicorn":
        raise SystemExit(f"unknown server {server!r}: one of {', '.join(SERVERS)}")
    if importlib.util.find_spec("gunicorn") is None:
        raise SystemExit("gunicorn is not installed (pip install gunicorn) for the comparison")
    return [
        sys.executable, "-m", "gunicorn", "config.wsgi:application",
        "--workers", str(workers),
        *(["--worker-class", "gthread", "--threads", str(threads)] if threads > 1 else []),
        "--bind", f"127.0.0.1:{port}",
        "--backlog", "4096",
        "--log-level", "warning",
    ]  # fmt: skip


def server_env(threads: int = 1, settings: str = "config.settings") -> dict[str, str]:
    """A production-mode server environment (DEBUG off) for the benchmarks;
    ``threads``: requests a granian worker runs at once (WEB_THREADS)."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": settings,
        "WEB_THREADS": str(threads),
        "DJANGO_DEBUG": "false",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }


def start_server(
    workers: int, threads: int = 1, server: str = "granian", settings: str = "config.settings"
) -> tuple[subprocess.Popen, str]:
    """The server on a free port, once /healthz answers."""
    port = free_port()
    argv = server_argv(server, port=port, workers=workers, threads=threads)
    env = server_env(threads, settings)
    proc = subprocess.Popen(argv, env=env, cwd=ROOT, start_new_session=True)  # noqa: S603
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1) as response:  # noqa: S310
                if response.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit(f"{server} did not come up")


def stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


# --- where the CPU goes -------------------------------------------------------------

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm may hold spaces: split after its closing parenthesis
    name = raw[raw.index("(") + 1 : raw.rindex(")")]
    return [name, *raw[raw.rindex(")") + 2 :].split()]


def cpu_snapshot(server_pid: int | None, proxy_pid: int | None = None) -> dict[str, float]:
    """CPU seconds so far of the server (its main process and workers), of a
    proxy in front of it (nginx: its master and workers) when given, and of
    every postgres and redis-server process on the machine."""
    totals = {"server": 0.0, "postgres": 0.0, "redis": 0.0}
    if proxy_pid is not None:
        totals["nginx"] = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is None:
            continue
        name, ppid = stat[0], int(stat[2])
        seconds = (int(stat[12]) + int(stat[13])) / _TICK  # utime + stime
        if server_pid is not None and server_pid in (int(entry.name), ppid):
            totals["server"] += seconds
        elif proxy_pid is not None and proxy_pid in (int(entry.name), ppid):
            totals["nginx"] += seconds
        elif name.startswith("postgres"):
            totals["postgres"] += seconds
        elif name.startswith("redis-server"):
            totals["redis"] += seconds
    return totals


def cpu_per_request(before: dict, after: dict, client_cpu: float, requests: int) -> str:
    used = {k: after[k] - before[k] for k in before}
    used["client"] = client_cpu
    parts = [f"{k} {1e6 * v / requests:.0f}" for k, v in used.items()]
    return "   CPU per request (us): " + ", ".join(parts) + f"  (load avg {os.getloadavg()[0]:.1f})"


# --- the HTTP load generator -------------------------------------------------------


async def _requests(host: str, port: int, payloads: list[bytes], concurrency: int) -> tuple:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    index = 0

    async def worker() -> None:
        nonlocal index
        while index < len(payloads):
            payload = payloads[index]
            index += 1
            started = time.perf_counter()
            try:
                reader, writer = await asyncio.open_connection(host, port)
                writer.write(payload)
                data = await reader.read()
                writer.close()
                status = int(data[9:12])
            except (OSError, ValueError):
                status = 0
            latencies.append(time.perf_counter() - started)
            statuses[status] = statuses.get(status, 0) + 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return started, time.perf_counter(), latencies, statuses


def _process(args: tuple) -> tuple:
    host, port, payloads, concurrency, start_at = args
    while time.time() < start_at:
        time.sleep(0.001)
    cpu = time.process_time()
    started, ended, latencies, statuses = asyncio.run(_requests(host, port, payloads, concurrency))
    cpu = time.process_time() - cpu
    return time.time() - (ended - started), time.time(), latencies, statuses, cpu


WRK_SCRIPT = r"""
-- Each request carries the next token of this thread's share (tokens split
-- between wrk's threads, taken in turn; "-": no Authorization, a public
-- read). Prints one BENCHJSON line.
local counter = 0
function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
end
function init(args)
  method, path, nthreads = args[1], args[2], tonumber(args[4])
  tokens = {}
  local i = 0
  for line in io.lines(args[3]) do
    if i % nthreads == tid then tokens[#tokens + 1] = line end
    i = i + 1
  end
  sent = 0
end
function request()
  sent = sent + 1
  local token = tokens[(sent - 1) % #tokens + 1]
  local headers = {["Content-Length"] = "0"}
  if token ~= "-" then headers["Authorization"] = "Bearer " .. token end
  return wrk.format(method, path, headers)
end
function done(summary, latency, requests)
  io.write(string.format(
    'BENCHJSON {"requests": %d, "duration_us": %d, "non2xx": %d, "p50_us": %d, ' ..
    '"p99_us": %d, "max_us": %d, "errors": %d}\n',
    summary.requests, summary.duration, summary.errors.status, latency:percentile(50),
    latency:percentile(99), latency.max,
    summary.errors.connect + summary.errors.read + summary.errors.write +
    summary.errors.timeout))
end
"""


def http_load_wrk(
    url: str,
    method: str,
    path: str,
    tokens: list[str],
    clients: int,
    server_pid: int | None,
    proxy_pid: int | None = None,
) -> dict:
    """The same load through wrk for ``WRK_SECONDS`` (C, one connection per
    client, re-opened after each answer since sync workers close it): far less
    client CPU on the same machine than the Python client. A join token used
    twice answers 409: give more tokens than the seconds times the rate, the
    409s are reported."""
    import json
    import resource
    import tempfile

    threads = 2
    with tempfile.TemporaryDirectory() as tmp:
        script, token_file = Path(tmp, "load.lua"), Path(tmp, "tokens.txt")
        script.write_text(WRK_SCRIPT)
        token_file.write_text("\n".join(tokens) + "\n")
        argv = ["wrk", f"-t{threads}", f"-c{clients}", f"-d{WRK_SECONDS}s", "--timeout", "10s"]
        argv += ["-s", str(script), url, "--", method, path, str(token_file), str(threads)]
        cpu_before = cpu_snapshot(server_pid, proxy_pid)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout  # noqa: S603
        children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_after = cpu_snapshot(server_pid, proxy_pid)
    line = next(x for x in out.splitlines() if x.startswith("BENCHJSON "))
    r = json.loads(line.removeprefix("BENCHJSON "))
    client_cpu = (children_after.ru_utime + children_after.ru_stime) - (
        children.ru_utime + children.ru_stime
    )
    ok = r["requests"] - r["non2xx"] - r["errors"]
    return {
        "cpu": cpu_per_request(cpu_before, cpu_after, client_cpu, r["requests"]),
        "requests": r["requests"],
        "ok": ok,
        "statuses": {"non-2xx": r["non2xx"], "errors": r["errors"]},
        "per_second": ok / (r["duration_us"] / 1e6),
        "p50_ms": r["p50_us"] / 1000,
        "p99_ms": r["p99_us"] / 1000,
        "max_ms": r["max_us"] / 1000,
    }


def http_load(
    url: str,
    method: str,
    path_token: list[tuple[str, str]],
    clients: int,
    server_pid: int | None = None,
    proxy_pid: int | None = None,
) -> dict:
    """``proxy_pid``: a proxy in front of the server (its CPU is counted;
    wrk only). A token of PUBLIC sends no Authorization header."""
    if USE_WRK and len({p for p, _ in path_token}) == 1:
        return http_load_wrk(
            url,
            method,
            path_token[0][0],
            [t for _, t in path_token],
            clients,
            server_pid,
            proxy_pid,
        )
    parts = urlsplit(url)
    host, port = parts.hostname, parts.port or 80
    payloads = [
        (
            f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n"
            + (f"Authorization: Bearer {token}\r\n" if token != PUBLIC else "")
            + "Content-Length: 0\r\nConnection: close\r\n\r\n"
        ).encode()
        for path, token in path_token
    ]
    procs = 2
    chunks = [payloads[i::procs] for i in range(procs)]
    start_at = time.time() + 0.5
    with mp.get_context("fork").Pool(procs) as pool:
        cpu_before = cpu_snapshot(server_pid)
        results = pool.map(
            _process, [(host, port, chunk, clients // procs, start_at) for chunk in chunks]
        )
        cpu_after = cpu_snapshot(server_pid)
    began = min(r[0] for r in results)
    ended = max(r[1] for r in results)
    latencies = sorted(lat for r in results for lat in r[2])
    statuses: dict[int, int] = {}
    for r in results:
        for status, count in r[3].items():
            statuses[status] = statuses.get(status, 0) + count
    ok = sum(count for status, count in statuses.items() if 200 <= status < 300)
    return {
        "cpu": cpu_per_request(cpu_before, cpu_after, sum(r[4] for r in results), len(latencies)),
        "requests": len(latencies),
        "ok": ok,
        "statuses": statuses,
        "per_second": ok / (ended - began),
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[int(len(latencies) * 0.99)],
        "max_ms": 1000 * latencies[-1],
    }


PUBLIC = "-"  # the "token" of a request without Authorization (a public read)
USE_WRK = False  # set by a bench's main(): wrk when installed, unless --python-client
WRK_SECONDS = 15


def fmt(result: dict) -> str:
    r = result
    return (
        f"   {r['per_second']:.0f}/s ok={r['ok']}/{r['requests']} p50={r['p50_ms']:.1f} ms "
        f"p99={r['p99_ms']:.1f} ms max={r['max_ms']:.0f} ms statuses={r['statuses']}\n" + r["cpu"]
    )


def line(label: str, r: dict) -> str:
    rate = f"{r['per_second']:8.0f}/s"
    return f"   {label:<14} {rate}  p50 {r['p50_ms']:.1f} ms  p99 {r['p99_ms']:.1f} ms"
