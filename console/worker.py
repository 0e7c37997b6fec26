"""What the console hangs on Celery's signals, in the worker and in beat:

- each task run is timed (``fairqueue_task_duration_seconds``) and its log
  lines carry the task id as their request id;
- heartbeat files for the container healthchecks (``HEARTBEAT_DIR``): the
  worker touches ``worker`` on every Celery heartbeat (2 s), beat touches
  ``beat`` whenever it sends a task; ``python -m console.probe`` reads them;
- with ``CELERY_METRICS_PORT`` set, the worker and beat serve their own
  process metrics there (in docker compose each container is scraped).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from celery.signals import (
    beat_init,
    before_task_publish,
    heartbeat_sent,
    task_postrun,
    task_prerun,
    worker_init,
)
from django.conf import settings

from console.metrics import wsgi_app
from fairqueue.logs import log_context
from fairqueue.metrics import TASK_DURATION

logger = logging.getLogger(__name__)

_runs: dict[str, tuple[float, contextlib.ExitStack]] = {}
_in_beat = False


@task_prerun.connect
def _task_started(task_id: str, task: Any, **kwargs: Any) -> None:
    stack = contextlib.ExitStack()
    stack.enter_context(log_context(request_id=task_id))
    _runs[task_id] = (time.perf_counter(), stack)


@task_postrun.connect
def _task_finished(task_id: str, task: Any, **kwargs: Any) -> None:
    started, stack = _runs.pop(task_id, (None, None))
    if stack is not None:
        stack.close()
    if started is not None:
        TASK_DURATION.labels(task.name).observe(time.perf_counter() - started)


def touch(name: str) -> None:
    """Mark ``name`` alive now (no-op without HEARTBEAT_DIR)."""
    if not settings.HEARTBEAT_DIR:
        return
    path = Path(settings.HEARTBEAT_DIR)
    try:
        path.mkdir(parents=True, exist_ok=True)
        (path / name).touch()
    except OSError as exc:  # a full or read-only disk must not stop the worker
        logger.warning("heartbeat %s not written: %s", name, exc)


@heartbeat_sent.connect
def _worker_alive(**kwargs: Any) -> None:
    touch("worker")


@beat_init.connect
def _beat_started(**kwargs: Any) -> None:
    global _in_beat
    _in_beat = True
    touch("beat")
    _serve_metrics("beat")


@before_task_publish.connect
def _beat_sent(**kwargs: Any) -> None:
    if _in_beat:  # web processes publish tasks too; only beat's sends count
        touch("beat")


@worker_init.connect
def _worker_started(**kwargs: Any) -> None:
    touch("worker")
    _serve_metrics("worker")


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes are not news."""


def _serve_metrics(process: str) -> WSGIServer | None:
    port = settings.CELERY_METRICS_PORT
    if not port:
        return None
    server = make_server("0.0.0.0", port, wsgi_app, handler_class=_QuietHandler)  # noqa: S104
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    logger.info("%s metrics on port %s", process, port)
    return server
