"""deploy/nginx.conf's micro-cache of the line state and the draw documents,
run by Debian's real nginx in front of an origin in this process: no other
spelling of a document's path (``//``, ``/./``, ``x/../``, a %-escape, a
query string) puts an answer under the document's cache key, and only a 200
is kept. Never skipped: a missing nginx fails the test (``make test``
installs it, Debian's ``nginx`` package).

The configuration is the deployed file, whole, with only its addresses and
paths replaced (``adapted``): compose's upstreams ``web:8000`` and
``ws:8001`` become the origin here, ``listen 80`` a free loopback port, and
``/var/cache/nginx/``, ``/var/log/nginx/`` and ``/srv/static/`` this test's
directory. It is included in a small ``http`` block of its own, as compose
includes it in the image's."""

from __future__ import annotations

import getpass
import http.client
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote

import pytest

from queueing.wsgi import CACHE_CONTROL, DRAW_CACHE_CONTROL

REPO = Path(__file__).resolve().parents[2]
DEPLOYED = REPO / "deploy" / "nginx.conf"

EVENT = "0b5c2a3e-8f7d-4e1a-9c6b-2d3f4a5b6c7d"
STATE = f"/api/v1/events/{EVENT}/queue/state/"
DRAW = f"/api/v1/events/{EVENT}/queue/draw/3f/"
DOCUMENTS = {
    STATE: (b'{"served": 7, "frontier": 1234}', CACHE_CONTROL),
    DRAW: (b'{"epoch": 1, "served": 0, "entries": {"0a1b2c3d4e5f60": 17}}', DRAW_CACHE_CONTROL),
}
NOT_FOUND = b'{"error": {"code": "not_found"}}'


def spellings(path: str) -> list[str]:
    """Other ways to write ``path`` that nginx matches to the same location
    (and to the same ``$uri``, the cache key)."""
    return [
        "/" + path,
        path.replace("/api/v1/", "/api/v1//"),
        path.replace("/queue/", "/./queue/"),
        path.replace("/queue/", "/x/../queue/"),
        path.replace("/events/", "/%65vents/"),
        path + "?cache=busted",
    ]


# --- the origin ---------------------------------------------------------------------


class Origin:
    """The documents for their one path (%-escapes decoded, as a WSGI server
    decodes them; anything else spelled differently is not found, as Django
    answers ``//api/...``), a 404 without Cache-Control otherwise (Django's
    not-found answer). ``asked``: every request target as it arrived."""

    def __init__(self) -> None:
        self.documents = dict(DOCUMENTS)
        self.asked: list[str] = []
        origin = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                # self.path has a leading "//" already collapsed: read the line as sent.
                target = self.requestline.split()[1]
                origin.asked.append(target)
                found = origin.documents.get(unquote(target.partition("?")[0]))
                if found is None:
                    self.send_response(404)
                    body = NOT_FOUND
                else:
                    self.send_response(200)
                    body, cache_control = found
                    self.send_header("Cache-Control", cache_control)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]

    @contextmanager
    def serving(self) -> Iterator[Origin]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()
            thread.join(timeout=5)


# --- nginx --------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def adapted(conf: str, *, port: int, origin: int, workdir: Path) -> str:
    """The deployed file with its addresses and paths replaced, each exactly
    once (a file that no longer has one fails here, not later)."""
    replacements = {
        "server web:8000;": f"server 127.0.0.1:{origin};",
        "server ws:8001;": f"server 127.0.0.1:{origin};",
        "listen 80;": f"listen 127.0.0.1:{port};",
        "/var/cache/nginx/": f"{workdir}/cache/",
        "/var/log/nginx/": f"{workdir}/",
        "/srv/static/": f"{workdir}/static/",
    }
    for old, new in replacements.items():
        assert conf.count(old) == 1, f"deploy/nginx.conf: {old!r} is not there once"
        conf = conf.replace(old, new)
    return conf


def main_config(workdir: Path) -> str:
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
events {{ worker_connections 256; }}
http {{
    access_log {workdir / "access.log"};
{temp}
    include {workdir / "site.conf"};
}}
"""


@contextmanager
def nginx_in_front(origin: Origin, workdir: Path) -> Iterator[int]:
    """Debian's nginx on deploy/nginx.conf in front of ``origin``: its port."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(binary).exists():
        pytest.fail("nginx is missing: `make tools` installs it (Debian package nginx)")
    port = free_port()
    (workdir / "cache").mkdir()  # nginx makes the cache's own directory, not its parent
    (workdir / "site.conf").write_text(
        adapted(DEPLOYED.read_text(), port=port, origin=origin.port, workdir=workdir)
    )
    (workdir / "nginx.conf").write_text(main_config(workdir))
    argv = [binary, "-p", str(workdir), "-e", str(workdir / "error.log")]
    proc = subprocess.Popen(  # noqa: S603 - Debian's nginx, our own arguments
        [*argv, "-c", str(workdir / "nginx.conf")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            if proc.poll() is not None:
                output = proc.stdout.read().decode() if proc.stdout else ""
                pytest.fail(f"nginx did not start on deploy/nginx.conf:\n{output}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("nginx did not listen within 10 s")
                time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Answer(NamedTuple):
    status: int
    body: bytes
    cache: str | None


def get(port: int, target: str) -> Answer:
    """A GET with ``target`` on the request line exactly as written."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", target, headers={"Host": "tickets.example.com"})
        response = connection.getresponse()
        return Answer(response.status, response.read(), response.getheader("X-Cache-Status"))
    finally:
        connection.close()


@pytest.fixture
def front(tmp_path: Path) -> Iterator[tuple[Origin, int]]:
    with Origin().serving() as origin, nginx_in_front(origin, tmp_path) as port:
        yield origin, port


# --- the tests ----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("path", [STATE, DRAW], ids=["state", "draw"])
@pytest.mark.parametrize("spelling", range(len(spellings(STATE))))
def test_no_other_spelling_puts_its_answer_under_the_documents_key(front, path, spelling):
    origin, port = front
    spelled = spellings(path)[spelling]
    body = DOCUMENTS[path][0]

    first = get(port, spelled)
    then = get(port, path)

    # The document is still itself, and the other spelling was the document too.
    assert (then.status, then.body) == (200, body), spelled
    assert (first.status, first.body) == (200, body), spelled
    # The origin was asked for the one path that is the cache key, nothing else.
    assert origin.asked, spelled
    assert set(origin.asked) == {path}, spelled


@pytest.mark.slow
def test_a_stream_of_other_spellings_never_turns_the_line_state_into_a_404(front):
    """Other spellings and the real reads interleaved for over two seconds:
    the cached copy expires and is refreshed in the background meanwhile, and
    every real read is still the line state."""
    origin, port = front
    others = spellings(STATE)
    answers = []
    deadline = time.monotonic() + 2.5
    while time.monotonic() < deadline:
        for spelled in others:
            get(port, spelled)
        answers.append(get(port, STATE))
        time.sleep(0.05)

    assert len(answers) >= 10
    assert [(a.status, a.body) for a in answers] == [(200, DOCUMENTS[STATE][0])] * len(answers)
    assert set(origin.asked) == {STATE}
    assert 2 <= len(origin.asked) <= 5  # about one a second, not one per read


@pytest.mark.slow
def test_only_a_200_is_kept(front):
    """A document the origin does not have yet (an event not found, a draw
    not made) is asked for again on the next read, and is there as soon as
    the origin has it."""
    origin, port = front
    missing = f"/api/v1/events/{EVENT}/queue/draw/40/"

    before = [get(port, missing), get(port, missing)]
    origin.documents[missing] = (b'{"epoch": 1}', DRAW_CACHE_CONTROL)
    written = get(port, missing)
    again = get(port, missing)

    assert [(a.status, a.body, a.cache) for a in before] == [(404, NOT_FOUND, "MISS")] * 2
    assert (written.status, written.body, written.cache) == (200, b'{"epoch": 1}', "MISS")
    assert (again.status, again.cache) == (200, "HIT")
    assert origin.asked == [missing] * 3
