"""nginx in front of a benchmark's server, with the line state's micro-cache
exactly as compose ships it: the ``proxy_cache_path`` and the line state's
``location`` are read from deploy/nginx.conf, so the bench measures the
deployed configuration. Debian's nginx (``make bench-tools``), run by this
process as a child of its own, stopped at the end.
"""

from __future__ import annotations

import getpass
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from bench.http_load import free_port
from bench.queue_setup import ROOT

DEPLOYED = ROOT / "deploy" / "nginx.conf"


def deployed_cache_config(conf: str) -> tuple[str, str]:
    """The cache zone's statement and the line state's location block of the
    deployed configuration."""
    zone = re.search(r"^proxy_cache_path\s[^;]*;", conf, re.MULTILINE)
    start = conf.find("location ~ ^/api/v1/events/")
    if zone is None or start < 0:
        raise SystemExit("deploy/nginx.conf has no line-state cache to measure")
    depth, end = 0, start
    for end in range(conf.index("{", start), len(conf)):
        depth += {"{": 1, "}": -1}.get(conf[end], 0)
        if depth == 0:
            break
    return zone.group(0), conf[start : end + 1]


def nginx_config(*, upstream: str, port: int, workdir: Path) -> str:
    zone, location = deployed_cache_config(DEPLOYED.read_text())
    zone = re.sub(r"/var/cache/nginx/\S+", str(workdir / "cache"), zone)
    temp = "\n".join(
        f"    {name}_temp_path {workdir / name};"
        for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""
user {getpass.getuser()};
worker_processes 1;
daemon off;
pid {workdir / "nginx.pid"};
error_log {workdir / "error.log"} warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
{temp}
    upstream fairqueue_web {{ server {upstream}; keepalive 32; }}
    {zone}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        {location}
    }}
}}
"""


class Nginx:
    """``with Nginx(url) as proxy:`` ``proxy.url``, ``proxy.pid`` (the master;
    its worker is its child, so the CPU counts take both)."""

    def __init__(self, upstream_url: str) -> None:
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        if not Path(binary).exists():
            raise FileNotFoundError("nginx is not installed: make bench-tools")
        self.binary = binary
        parts = urlsplit(upstream_url)
        self.upstream = f"{parts.hostname}:{parts.port}"
        self.workdir = Path(tempfile.mkdtemp(prefix="fairqueue-nginx-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Nginx:
        conf = self.workdir / "nginx.conf"
        conf.write_text(nginx_config(upstream=self.upstream, port=self.port, workdir=self.workdir))
        argv = [self.binary, "-p", str(self.workdir), "-c", str(conf)]
        self.proc = subprocess.Popen(argv, start_new_session=True)  # noqa: S603
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/", timeout=1):  # noqa: S310
                    break
            except OSError as exc:
                if getattr(exc, "code", None):  # an HTTP answer: nginx is up
                    break
                time.sleep(0.1)
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)
