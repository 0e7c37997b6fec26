"""How the HTTP side is served: granian's WSGI interface in front of the Django app.

    python -m fairqueue.webserver   # what compose and the image run; `make run` too

One place builds the command line, so `make run`, docker compose, the image, the tests that
start the web process and the benchmarks run the same server with the same settings
(docs/DESIGN.md, "Serving HTTP", says why). It reads PORT (8000), WEB_HOST (0.0.0.0),
WEB_CONCURRENCY (2 workers), WEB_THREADS (4 per worker) and WEB_MAX_CONNECTIONS (1024)
and becomes granian (exec).

- Each worker runs WEB_THREADS (4) requests at once, purchases first (fairqueue/lanes.py):
  while one request waits (the payment gateway's round trip above all, a few hundred ms;
  Postgres, Redis) the others run. With one, 0.3 s of gateway latency held the web tier
  to a few payment starts a second and the sale crawled; with four it sold three times
  faster, and claims alone were no slower (docs/BENCHMARKS.md, "Flash sale"). The four share
  a pool of four Postgres connections (config/wsgi.py).
- Every request a worker accepts gets a blocking thread of its own (as many threads as
  its backpressure, below), which waits in its lane for one of those four slots: the
  order is ours, not granian's first come, first served, so a claim never queues behind
  the joins of a flood (docs/DESIGN.md, "Request lanes"). granian warns at start that this
  many Python threads "seems quite high": they wait, only WEB_THREADS run.
- The connections themselves live in granian's Rust runtime, not in a Python thread: an
  idle keep-alive socket or a slow client costs a little memory, never the worker (a
  gunicorn sync worker was held by each one).
- Backpressure: granian holds one permit per open connection and stops accepting once a
  worker holds its share. The share is the connection budget divided by the worker count,
  so the whole server holds up to WEB_MAX_CONNECTIONS (browsers keep several sockets
  open each); beyond that, connections wait in the listen backlog of the same size.
"""

from __future__ import annotations

import os
import sys

DEFAULT_WORKERS = 2  # one per core measured best (docs/BENCHMARKS.md)
DEFAULT_THREADS = 4
DEFAULT_MAX_CONNECTIONS = 1024


def backpressure(*, workers: int, max_connections: int = DEFAULT_MAX_CONNECTIONS) -> int:
    """Open connections each worker accepts: its share of the connection budget."""
    return max(1, max_connections // max(1, workers))


def web_argv(
    *,
    host: str,
    port: int,
    workers: int = DEFAULT_WORKERS,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    log_level: str = "info",
) -> list[str]:
    """The granian command line serving config.wsgi on host:port. How many
    requests a worker runs at once is config.wsgi's, from WEB_THREADS."""
    accepted = backpressure(workers=workers, max_connections=max_connections)
    return [
        sys.executable, "-m", "granian", "config.wsgi:application",
        "--interface=wsgi",
        f"--host={host}",
        f"--port={port}",
        f"--workers={workers}",
        f"--blocking-threads={accepted}",  # each waits in its lane for a slot (config.wsgi)
        f"--backpressure={accepted}",
        f"--backlog={max(128, max_connections)}",
        "--http=1",  # HTTP/1.1 with keep-alive; nginx in front speaks it too
        "--http1-keep-alive",
        "--no-ws",  # WebSockets are daphne's
        "--respawn-failed-workers",  # a worker that dies is replaced, as gunicorn's master did
        "--respawn-interval=0.5",
        f"--log-level={log_level}",
    ]  # fmt: skip


def main() -> None:
    argv = web_argv(
        host=os.environ.get("WEB_HOST", "0.0.0.0"),  # noqa: S104 - a server's job; nginx in front
        port=int(os.environ.get("PORT", "8000")),
        workers=int(os.environ.get("WEB_CONCURRENCY", DEFAULT_WORKERS)),
        max_connections=int(os.environ.get("WEB_MAX_CONNECTIONS", DEFAULT_MAX_CONNECTIONS)),
        log_level=os.environ.get("WEB_LOG_LEVEL", "info"),
    )
    os.execv(argv[0], argv)  # noqa: S606 - our own fixed command line


if __name__ == "__main__":
    main()
