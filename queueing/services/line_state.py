"""The public line state of an event (``GET events/{id}/queue/state/``): the
same bytes for every customer, written once per tick as JSON into one Redis
key, answered as they are (the rules a page follows with it are in
``queueing.domain`` and docs/API.md).

The tick writes it (``line_state_publish``) whatever it admitted, so the
status, the waiting count and when the next tick is due stay fresh. Nothing
else writes it, so a process keeps the bytes it read until the next tick is
due (``next_tick_at``; a late tick: a quarter of a second at a time) and
answers from memory meanwhile: at most one Redis read per event per tick
per process. A read that finds no key (Redis wiped, no tick for a while, a
sale that ended) builds it from Postgres, stores it unless a tick did
meanwhile, and answers: the rare path. With Redis down each process builds
it at most once per ``queueing.selectors.EVENT_CACHE_SECONDS``.
"""

from __future__ import annotations

import json
import time
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from events.domain import LIVE_STATUSES, EventStatus
from events.models import Event
from fairqueue.snapshots import SnapshotCache
from queueing import selectors
from queueing.domain import line_epoch, line_state_body, relearn_within_seconds
from queueing.selectors import admission_last_tick, queue_length
from queueing.services.clock import Progress, admission_progress
from queueing.store import queue_store

# Seconds a cache (the browser, compose's nginx, a CDN) may keep the state:
# it changes once per tick, and a page reads it just after a tick.
MAX_AGE_SECONDS = 1
# A state no tick has rewritten for this many intervals is dropped, and the
# next read builds it from Postgres (the beat or the workers are down).
STATE_TTL_TICKS = 3
# A state whose next tick is overdue is read again at most this often.
HOLD_OVERDUE_SECONDS = 0.25
HOLD_MAX_ENTRIES = 10_000

# Per process: event id -> (held until, in time.time() seconds; the document).
_held: dict[str, tuple[float, str]] = {}


def _ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)


def _interval() -> float:
    return float(settings.ADMISSION_INTERVAL_SECONDS)


def _encode(
    *,
    event_id: uuid.UUID | str,
    status: str,
    prequeue_drawn: bool,
    batch_size: int,
    progress: Progress,
    waiting: int | None,
    rate: float | None,
    now: datetime,
    next_tick: datetime,
) -> str:
    body = line_state_body(
        event_id=str(event_id),
        status=status,
        epoch=line_epoch(prequeue_drawn=prequeue_drawn),
        served=progress.served,
        frontier=progress.frontier,
        waiting=waiting,
        rate_per_second=rate,
        batch_size=batch_size,
        interval_seconds=_interval(),
        at_ms=_ms(now),
        next_tick_ms=_ms(next_tick),
        relearn_within=relearn_within_seconds(
            waiting=waiting, per_second=settings.QUEUE_RELEARN_PER_SECOND, interval=_interval()
        ),
    )
    return json.dumps(body, separators=(",", ":"))


def line_state_publish(
    *,
    event: Event,
    progress: Progress,
    waiting: int | None,
    rate: float | None,
    now: datetime,
) -> str:
    """The tick's write (after its admissions committed and reached Redis);
    returns the document, which the tick also hands to the sockets."""
    text = _encode(
        event_id=event.pk,
        status=event.status,
        prequeue_drawn=event.prequeue_shuffled_at is not None,
        batch_size=event.admission_batch_size,
        progress=progress,
        waiting=waiting,
        rate=rate,
        now=now,
        next_tick=now + timedelta(seconds=_interval()),
    )
    ttl_ms = int(STATE_TTL_TICKS * _interval() * 1000)
    queue_store().state_set(event_id=event.pk, body=text, ttl_ms=ttl_ms)
    _held.pop(str(event.pk), None)  # this process reads the new one at once
    return text


def _from_postgres(event_id: uuid.UUID | str) -> str | None:
    row = (
        Event.objects.exclude(status=EventStatus.DRAFT)
        .filter(pk=event_id)
        .values_list("status", "prequeue_shuffled_at", "admission_batch_size")
        .first()
    )
    if row is None:
        return None
    status, drawn_at, batch_size = row
    now = timezone.now()
    live = status in LIVE_STATUSES
    last = admission_last_tick(event_id=event_id)
    next_tick = now + timedelta(seconds=_interval())
    if last is not None and last + timedelta(seconds=_interval()) > now:
        next_tick = last + timedelta(seconds=_interval())
    return _encode(
        event_id=event_id,
        status=status,
        prequeue_drawn=drawn_at is not None,
        batch_size=batch_size,
        progress=admission_progress(event_id=event_id),
        waiting=queue_length(event_id=event_id) if live else 0,
        rate=queue_store().rate(event_id=event_id) if live else None,
        now=now,
        next_tick=next_tick,
    )


_built = SnapshotCache(_from_postgres, ttl=lambda: selectors.EVENT_CACHE_SECONDS)


def line_state_held(*, event_id: uuid.UUID | str) -> str | None:
    """The document as the last tick wrote it, from this process' memory
    until the next tick is due, else one Redis read; None when Redis has
    none (or could not be asked): ``line_state_answer`` builds it."""
    key, now = str(event_id), time.time()
    held = _held.get(key)
    if held is not None and held[0] > now:
        return held[1]
    text = queue_store().state(event_id=event_id)
    if text is not None:
        _hold(key, text, now)
    return text


def _hold(key: str, text: str, now: float) -> None:
    try:
        next_tick = float(json.loads(text)["next_tick_at"]) / 1000
    except (ValueError, KeyError, TypeError):
        return
    if len(_held) >= HOLD_MAX_ENTRIES:
        _held.clear()
    _held[key] = (max(now + HOLD_OVERDUE_SECONDS, min(next_tick, now + _interval())), text)


def line_state_answer(*, event_id: uuid.UUID | str) -> str | None:
    """The document as the last tick wrote it: at most one Redis read. None:
    no such event (or a draft)."""
    text = line_state_held(event_id=event_id)
    if text is not None:
        return text
    text = _built.get(event_id)
    if text is not None:
        # Not over a state a tick wrote meanwhile; a tick replaces it soon.
        queue_store().state_add(event_id=event_id, body=text, ttl_ms=int(_interval() * 1000))
    return text


def line_state_forget(event_id: uuid.UUID | str | None = None) -> None:
    """Drop this process' copies (tests)."""
    _built.forget(event_id)
    if event_id is None:
        _held.clear()
    else:
        _held.pop(str(event_id), None)
