"""Follow-up work, started one way. A service says what happened with a
Django signal once its transaction commits (``send_on_commit``); the app that
owns the follow-up connects a receiver (``<app>/receivers.py``) that does it,
or enqueues its Celery task (``enqueue``). A transaction that rolls back
says nothing, so nothing follows it.

A signal even inside one app: the services never import a task module (the
tasks import the services), and no task is named by a string. Between apps
it is the only way up the import graph (the apps below know nothing of the
ones above).
"""

from __future__ import annotations

from typing import Any

from celery import Task
from django.db import transaction
from django.dispatch import Signal


def send_on_commit(signal: Signal, *, sender: type, **news: Any) -> None:
    """``signal`` sent once the current transaction commits, never if it
    rolls back; at once outside a transaction. robust: the change is
    committed and answered as done whatever a receiver does; a receiver
    that fails is logged, and its follow-up's safety net finds what was
    missed (the confirmation-email sweep, refund reconciliation, the queue
    reconciliation)."""
    transaction.on_commit(lambda: signal.send(sender=sender, **news), robust=True)


def enqueue(task: Task, *args: Any) -> None:
    """Publish one run of ``task``. No publish retries: with the broker down
    this raises at once (``send_on_commit`` logs it) instead of holding up
    the request that caused it; the follow-up's safety net picks it up."""
    task.apply_async(args=list(args), retry=False)
