"""The Celery app as the web process uses it: queuing a task from a request
thread that never queued one costs nothing extra. Celery keeps its result
backend per thread unless told it is thread safe, and finding the (disabled)
backend scans every installed package's entry points, ~7 ms of CPU; a web
worker's request threads come and go (fairqueue/lanes.py)."""

from __future__ import annotations

import threading

from celery.app import backends

from config.celery import app


def test_every_thread_shares_one_result_backend_found_once(monkeypatch):
    found = []
    scan = backends.load_extension_class_names

    def counted(namespace):
        found.append(namespace)
        return scan(namespace)

    monkeypatch.setattr(backends, "load_extension_class_names", counted)
    seen = []
    for _ in range(5):  # five request threads, each new
        thread = threading.Thread(target=lambda: seen.append(app.backend))
        thread.start()
        thread.join()
    assert len({id(backend) for backend in seen}) == 1
    assert len(found) <= 1  # the first thread, unless an earlier test found it
    assert app.conf.task_ignore_result
