"""Test-only fault injection: make a process fail at an exact line.

Production code marks the dangerous gaps with ``fault_point("name")`` (for
example between a Postgres commit and the Redis write that follows it). The
call does nothing unless ``settings.FAULT_HOOKS_ENABLED`` is on AND a test has
armed that point, so a test can show the system healing from a crash there.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings

_armed: set[str] = set()
_lock = threading.Lock()


class InjectedFault(RuntimeError):
    """Raised at an armed fault point: stands in for a crashed process."""


def fault_point(name: str) -> None:
    if settings.FAULT_HOOKS_ENABLED and name in _armed:
        raise InjectedFault(name)


@contextmanager
def fault_armed(name: str) -> Iterator[None]:
    """Arm ``name`` for the duration of the block (needs FAULT_HOOKS_ENABLED)."""
    with _lock:
        _armed.add(name)
    try:
        yield
    finally:
        with _lock:
            _armed.discard(name)
