"""Test-only fault injection: make a process fail at an exact line.

Production code marks the dangerous gaps with ``fault_point("name")`` (for
example between a Postgres commit and the Redis write that follows it). The
call does nothing unless a test has turned ``HOOKS_ENABLED`` on AND armed
that point, so a test can show the system healing from a crash there. No
setting or variable turns it on: a deployment cannot.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

HOOKS_ENABLED = False
_armed: set[str] = set()
_lock = threading.Lock()


class InjectedFault(RuntimeError):
    """Raised at an armed fault point: stands in for a crashed process."""


def fault_point(name: str) -> None:
    if HOOKS_ENABLED and name in _armed:
        raise InjectedFault(name)


@contextmanager
def fault_armed(name: str) -> Iterator[None]:
    """Arm ``name`` for the duration of the block (needs ``HOOKS_ENABLED``)."""
    with _lock:
        _armed.add(name)
    try:
        yield
    finally:
        with _lock:
            _armed.discard(name)
