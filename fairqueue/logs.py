"""Log lines people can use: every line carries the request id and the event
id it belongs to (when known), plain text or JSON (``LOG_FORMAT=json``, one
object per line, by python-json-logger), and the chatter of healthy
machinery stays out of the way.

- ``log_context(request_id=..., event_id=...)`` binds values for everything
  logged inside it (a context variable: per thread and per asyncio task);
  the HTTP middleware (fairqueue/requestlog.py) and the Celery task hooks
  bind them.
- Routine self-repair is INFO; WARNING and ERROR are for what a person may
  have to look at (real divergence, money trouble).
- Celery logs two INFO lines per task run (received, succeeded) and beat one
  per schedule tick: about 60 a minute with nothing happening. They are
  turned into DEBUG lines, shown only with ``LOG_LEVEL=DEBUG``; failures keep
  their level.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

UNKNOWN = "-"
_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("fq_request_id", default="")
_event_id: contextvars.ContextVar[str] = contextvars.ContextVar("fq_event_id", default="")
_VARS = {"request_id": _request_id, "event_id": _event_id}


@contextmanager
def log_context(**values: object) -> Iterator[None]:
    """Bind ``request_id`` and/or ``event_id`` for the lines logged inside."""
    tokens = [(_VARS[name], _VARS[name].set(str(value))) for name, value in values.items()]
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


def bind_event(event_id: object) -> None:
    """Name the event for the rest of the current context (a request's view)."""
    _event_id.set(str(event_id))


def current_request_id() -> str:
    return _request_id.get()


class ContextFilter(logging.Filter):
    """Puts ``request_id`` and ``event_id`` on every record (``-`` when
    unknown); a value passed with ``extra=`` wins."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, var in _VARS.items():
            if not getattr(record, name, None):
                setattr(record, name, var.get() or UNKNOWN)
        return True


# Loggers whose INFO lines are per-task or per-schedule-tick chatter, and the
# start of their chatty messages ("": every INFO line). Beat's other INFO lines
# stay: "beat: Starting..." is how `make run` knows beat is up.
CHATTY_LOGGERS = {
    "celery.app.trace": "",
    "celery.worker.strategy": "",
    "celery.beat": "Scheduler: Sending due task",
}


class ChatterToDebug(logging.Filter):
    """Celery's per-task and per-tick INFO lines become DEBUG lines (dropped
    unless the root logger is at DEBUG). Lines at WARNING and above are
    untouched."""

    def filter(self, record: logging.LogRecord) -> bool:
        chatter = CHATTY_LOGGERS.get(record.name)
        if record.levelno != logging.INFO or chatter is None:
            return True
        if not str(record.msg).startswith(chatter):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger().isEnabledFor(logging.DEBUG)


class JsonFormatter(_JsonFormatter):
    """One JSON object per line; a context value that is unknown is left
    out rather than written as ``-``."""

    def process_log_record(self, log_record: dict[str, Any]) -> dict[str, Any]:
        for name in _VARS:
            if log_record.get(name) == UNKNOWN:
                del log_record[name]
        return super().process_log_record(log_record)


PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"
JSON_FIELDS = "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s %(event_id)s"


def logging_config(*, level: str = "INFO", fmt: str = "plain") -> dict[str, Any]:
    """The ``LOGGING`` dict of the settings (and of Celery's processes)."""
    if fmt not in ("plain", "json"):
        raise ValueError(f"LOG_FORMAT must be plain or json, not {fmt!r}")
    formatters: dict[str, dict[str, Any]] = {
        "plain": {"format": PLAIN_FORMAT},
        "json": {
            "()": JsonFormatter,
            "fmt": JSON_FIELDS,
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "context": {"()": ContextFilter},
            "chatter": {"()": ChatterToDebug},
        },
        "formatters": {fmt: formatters[fmt]},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": fmt,
                "filters": ["chatter", "context"],
            }
        },
        "root": {"handlers": ["console"], "level": level.upper()},
        "loggers": {
            "django.db.backends": {"level": "WARNING"},
            # Django logs every 4xx answer here as a warning: our request line
            # (fairqueue.http) already has it, and a burst of 409s during a
            # sale would pay for each twice. Server errors still come through.
            "django.request": {"level": "ERROR"},
        },
    }
