"""The admission tick of one event: shuffle the pre-queue at sale start,
expire lapsed admissions, admit the next batch, tell everyone.

Order of writes, and why a crash anywhere heals
-----------------------------------------------
Postgres decides and commits first; Redis follows.

* Who is admitted is chosen in Postgres: the event row is locked
  (``FOR NO KEY UPDATE``: it serialises concurrent ticks but does not block
  joins, whose foreign key only takes ``FOR KEY SHARE``), capacity is counted
  from Postgres (free tickets, live admissions), the next ``n`` WAITING rows by
  (score, customer id) are moved to ADMITTED in one conditional UPDATE, and the
  transaction commits. Only then does one Lua script move exactly those
  customers from the waiting set to the admitted set in Redis.
* A crash after the commit and before the Lua move leaves customers ADMITTED
  in Postgres and still in Redis' waiting set. Nothing is over-admitted,
  because capacity is always counted in Postgres; the admission is valid for
  the claim step (the claim statement reads it from Postgres). The next tick
  heals it, whatever it admits itself (nobody, when the crashed tick took the
  last slots): every tick of a live event runs the Lua step, which compares
  Redis' served counter with Postgres' total before the tick's own batch. A
  counter behind means a batch never reached Redis, and the tick moves every
  ADMITTED entry (few: at most the free tickets) into the admitted set and
  tells the customers it moved; the position endpoint hands out their token
  from then on. The check costs nothing on a tick where Redis kept up.
* The same Lua step tells the tick when the line marker is gone (a Redis
  wipe): the tick then rebuilds the line from Postgres (``rebuild.py``),
  after releasing its lock; until then joins and position reads answer from
  Postgres.
* The other order (pop in Redis first) would let a crash, or a Redis wipe,
  leave people admitted in Redis whom Postgres never recorded, and a second
  worker counting capacity from Redis could admit past the tickets left.
* Two ticks at once: the event's Redis lock (released only by its owner)
  makes that rare, the event row lock makes it harmless. The second tick
  waits for the first to commit and then counts its admissions.
* Re-running a tick is idempotent: the UPDATE only moves WAITING rows, the Lua
  move of a customer already moved changes nothing.
* The served total is counted in Postgres in the admitting transaction
  (``AdmissionState.served``) and Redis is set to it, never incremented: a
  counter re-made from Postgres after a flush is never counted twice.

Expiry (``expiry.py``) follows the same rule: ADMITTED -> EXPIRED in
Postgres, then ZREM; and only while the event's admission clock runs
(``clock.py``): a Redis outage or a stalled beat does not eat anyone's window.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from events.domain import LIVE_STATUSES as EVENT_LIVE_STATUSES
from events.domain import EventStatus
from events.models import Event
from fairqueue.broadcast import customer_group
from fairqueue.faults import fault_point
from fairqueue.locks import event_row_lock, redis_lock
from fairqueue.metrics import ADMISSION_TICK_DURATION, heal, timed
from fairqueue.redis import RedisUnavailable
from queueing.domain import EndReason, QueueStatus, line_epoch
from queueing.models import QueueEntry
from queueing.pushes import expired_text, send_expired, send_line, send_many
from queueing.selectors import waiting_count
from queueing.services.capacity import admission_room
from queueing.services.clock import (
    Progress,
    admission_clock_advance,
    admission_progress,
    admission_served_add,
    admission_state_ensure,
)
from queueing.services.expiry import admissions_lapse
from queueing.services.line_state import line_state_publish
from queueing.services.prequeue import prequeue_shuffle, prequeue_to_redis
from queueing.services.rebuild import queue_rebuild
from queueing.services.sold_out import admissions_sold_out
from queueing.store import queue_store
from queueing.tokens import admission_token_issue, admission_tokens_issue

logger = logging.getLogger(__name__)

RATE_WINDOW_SECONDS = 60.0
_TABLE = QueueEntry._meta.db_table

# The next n WAITING entries, in queue order, moved to ADMITTED in one
# statement. SKIP LOCKED: a row another transaction is touching (the customer
# abandoning right now) is passed over rather than waited for. ``= ANY(ARRAY(
# ...))`` makes Postgres fetch the n rows by primary key instead of scanning
# the whole queue to join against them.
_ADMIT_SQL = f"""
UPDATE {_TABLE} SET status = %s, admitted_at = %s, admission_expires_at = %s
WHERE id = ANY(ARRAY(
    SELECT id FROM {_TABLE}
    WHERE event_id = %s AND status = %s
    ORDER BY score, customer_id
    LIMIT %s
    FOR UPDATE SKIP LOCKED
)) AND status = %s
RETURNING id, customer_id, score
"""  # noqa: S608


@dataclass
class TickReport:
    event_id: str
    skipped: str = ""
    shuffled: int = 0
    expired: int = 0
    admitted: int = 0
    capacity: int = 0
    served: int | None = None
    rate: float | None = None
    ahead: int = 0  # admissions held beyond the free tickets (admitting ahead of no-shows)
    sold_out: int = 0  # admissions ended with nothing left: first on the waiting list
    readmitted: int = 0  # moved into Redis' admitted set from Postgres (Redis was behind)
    rebuilt: bool = False  # the line marker was gone: the line was rebuilt after the tick
    timings_ms: dict[str, float] = field(default_factory=dict)


def _lock_wait_seconds() -> float:
    """How long a tick waits for the lock before it gives up its turn: up to
    half a tick, so a full queue reconciliation holding the lock (2.3 s at
    1,000,000 waiting) delays a tick instead of costing it."""
    return min(3.0, float(settings.ADMISSION_INTERVAL_SECONDS) / 2)


def _lock_ttl_s() -> float:
    """Short: a tick takes well under a second, and the event row lock makes
    an overlap harmless, so the lock only needs to outlive one tick. Its TTL
    is how long a worker killed mid-tick stops admission of that event."""
    return max(5.0, float(settings.ADMISSION_INTERVAL_SECONDS) * 2)


def _ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000)


def _event_locked_for_admission(event_id: uuid.UUID | str) -> Event | None:
    """The guard against two ticks admitting at once: the event row, locked
    until the admitting transaction commits (``FOR NO KEY UPDATE`` so joins,
    whose foreign key takes ``FOR KEY SHARE``, are not blocked). A wait past
    ``DB_LOCK_TIMEOUT_MS`` is Busy: the tick of this event is skipped."""
    return event_row_lock(Event.objects.filter(pk=event_id), no_key=True)


@dataclass
class Admitted:
    event: Event | None
    capacity: int = 0
    rows: list[tuple[uuid.UUID, uuid.UUID]] = field(default_factory=list)  # (entry, customer)
    expires_at: datetime | None = None  # None: the tick could not admit (no capacity, not on sale)
    # Admitted so far in Postgres (this tick included), and the highest score admitted.
    progress: Progress = field(default_factory=lambda: Progress(0, None))
    ahead: int = 0  # admissions beyond the free tickets after this tick (admitting ahead)

    @property
    def served(self) -> int:
        return self.progress.served


def _admit_in_postgres(*, event_id: uuid.UUID | str, now: datetime) -> Admitted:
    """One short transaction: lock the event row, count, admit, count served."""
    with transaction.atomic():
        event = _event_locked_for_admission(event_id)
        if event is None or event.status not in EVENT_LIVE_STATUSES:
            return Admitted(event)
        admission_state_ensure(event_id=event_id)  # before the admissions it counts
        room = admission_room(event, now)
        capacity = room.admit
        if capacity == 0:
            return Admitted(event, progress=admission_progress(event_id=event_id))
        # Whole seconds: the admission token's expiry (JWT ``exp``) is then
        # exactly the admitted-set score. The time to choose.
        expires_at = (now + timedelta(seconds=event.admission_window_seconds)).replace(
            microsecond=0
        )
        with connection.cursor() as cursor:
            cursor.execute(
                _ADMIT_SQL,
                [
                    QueueStatus.ADMITTED.value,
                    now,
                    expires_at,
                    event_id,
                    QueueStatus.WAITING.value,
                    capacity,
                    QueueStatus.WAITING.value,
                ],
            )
            found = cursor.fetchall()
        progress = admission_served_add(
            event_id=event_id,
            admitted=len(found),
            highest_score=max((score for _, _, score in found), default=None),
        )
    rows = [(entry, customer) for entry, customer, _ in found]
    return Admitted(event, capacity, rows, expires_at, progress, room.ahead)


@timed(ADMISSION_TICK_DURATION, label_from="event_id")
def admission_tick_event(*, event_id: uuid.UUID | str, use_lock: bool = True) -> TickReport:
    """One tick for one event, single-flight (the event's Redis lock; a held
    lock is waited for up to half a tick, then the tick is skipped). Safe to
    re-run.

    With Redis down the tick still runs, without the lock: the event row lock
    in Postgres is what keeps concurrent ticks within capacity, and admitted
    customers get their token from the position endpoint (Postgres) until
    Redis is back. ``use_lock=False`` is for tests and the benchmark."""
    report = TickReport(event_id=str(event_id))
    if not use_lock:
        _tick(event_id, report)
    else:
        key = queue_store().lock_key(event_id)
        with redis_lock(key, ttl_s=_lock_ttl_s(), wait_s=_lock_wait_seconds()) as held:
            if held is None:
                report.skipped = "locked"
                return report
            _tick(event_id, report)
    if report.rebuilt:
        _line_rebuild(event_id)
    return report


def _line_rebuild(event_id: uuid.UUID | str) -> None:
    """The line marker was gone (a Redis wipe): the line back from Postgres,
    under the event's lock (which the tick has just released)."""
    try:
        queue_rebuild(event_id=event_id)
    except RedisUnavailable:
        logger.warning("line rebuild of event=%s stopped: Redis went away", event_id)


def _tick(event_id: uuid.UUID | str, report: TickReport) -> None:
    store = queue_store()
    started = time.perf_counter()
    now = timezone.now()
    event = Event.objects.filter(pk=event_id).first()
    if event is None or event.status not in (
        EventStatus.ACTIVE,
        EventStatus.PAUSED,
        EventStatus.SOLD_OUT,
    ):
        report.skipped = "not_live"
        return
    redis_up = store.ping()

    if event.prequeue_opens_at is not None and event.sale_start <= now:
        if event.prequeue_shuffled_at is None:
            report.shuffled = prequeue_shuffle(event_id=event_id, now=now)
        elif redis_up and store.shuffle_reached_redis(event_id=event_id) is False:
            # a crash came between the Postgres shuffle and Redis
            prequeue_to_redis(event_id=event_id)

    with transaction.atomic():
        if _event_locked_for_admission(event_id) is None:
            report.skipped = "not_live"
            return
        clock = admission_clock_advance(event_id=event_id, now=now, redis_up=redis_up)
    if clock.given_back:
        _windows_given_back(event_id, clock.given_back)
    expired = admissions_lapse(event_id=event_id, now=now) if clock.running else []
    report.expired = len(expired)
    if event.admit_ahead and event.status == EventStatus.SOLD_OUT:
        # Admitted ahead, and nothing is left: first on the waiting list
        # within a tick, whether or not they try to claim.
        report.sold_out = len(admissions_sold_out(event_id=event_id))
    t_expire = time.perf_counter()

    admitted = _admit_in_postgres(event_id=event_id, now=now)
    event, rows, expires_at = admitted.event, admitted.rows, admitted.expires_at
    report.capacity, report.ahead = admitted.capacity, admitted.ahead
    t_pg = time.perf_counter()
    fault_point("queue.admit.after_commit")
    if event is None or event.status not in EVENT_LIVE_STATUSES:
        report.skipped = "not_live"
        return

    # Every tick of a live event, admitting or not: it is also how the tick
    # learns that Redis is behind Postgres or lost the line.
    answer = None
    if redis_up:
        answer = store.admit(
            event_id=event_id,
            customer_ids=[str(customer_id) for _, customer_id in rows],
            served=admitted.served,
            expires_ms=_ms(expires_at) if expires_at is not None else 0,
            now_ms=_ms(now),
            duration_ms=int((t_pg - started) * 1000),
            interval_ms=int(settings.ADMISSION_INTERVAL_SECONDS * 1000),
            window_ms=int(max(RATE_WINDOW_SECONDS, settings.ADMISSION_INTERVAL_SECONDS * 3) * 1000),
            sample=expires_at is not None,
        )
    if answer is None:
        # Postgres has committed the admissions; the next tick that reaches
        # Redis moves them, and the position endpoint hands out the tokens.
        report.admitted, report.served = len(rows), admitted.served
        report.skipped = "redis_unavailable"
        # The channel layer may still be there.
        window = EndReason.ADMISSION_WINDOW.value
        send_expired(event_id=event_id, customer_ids=expired, reason=window)
        return
    served, rate = answer.served, answer.rate
    if answer.behind:
        report.readmitted = _admitted_to_redis(
            event_id, served=admitted.served, wiped=answer.served is None
        )
        served = admitted.served
    report.rebuilt = not answer.line_built
    report.served, report.rate = served, rate
    t_redis = time.perf_counter()

    news = [(c, _expired(event_id)) for c in expired]
    if expires_at is not None and rows:
        expires_iso = expires_at.isoformat()
        tokens = admission_tokens_issue(event_id=event.pk, expires_at=expires_at, entries=rows)
        news += [
            (str(customer_id), _admitted(event_id, token, expires_iso))
            for (_, customer_id), token in zip(rows, tokens, strict=True)
        ]
    t_tokens = time.perf_counter()
    # The public line state, and one message for every daphne process with
    # sockets of the event: the state and the news of this tick's customers
    # (queueing/line_sockets.py decides which sockets hear what).
    progress = Progress(
        served if served is not None else admitted.served, admitted.progress.frontier
    )
    # The line's length: Redis' count, or Postgres' while the line is not
    # rebuilt (the tick after a wipe).
    waiting = answer.waiting if answer.waiting is not None else waiting_count(event_id=event_id)
    state = line_state_publish(event=event, progress=progress, waiting=waiting, rate=rate, now=now)
    send_line(
        event_id=event_id,
        state=state,
        served=progress.served,
        admitted=len(rows),
        epoch=line_epoch(prequeue_drawn=event.prequeue_shuffled_at is not None),
        news=news,
    )
    t_push = time.perf_counter()

    report.admitted, report.served, report.rate = len(rows), served, rate
    report.timings_ms = {
        "expire": round((t_expire - started) * 1000, 2),
        "postgres": round((t_pg - t_expire) * 1000, 2),
        "redis": round((t_redis - t_pg) * 1000, 2),
        "tokens": round((t_tokens - t_redis) * 1000, 2),
        "push": round((t_push - t_tokens) * 1000, 2),
        "total": round((t_push - started) * 1000, 2),
    }
    if rows:
        logger.info(
            "admitted event=%s count=%s capacity=%s served=%s timings=%s",
            event_id,
            len(rows),
            admitted.capacity,
            served,
            report.timings_ms,
        )


def _admitted(event_id: uuid.UUID | str, token: str, expires_iso: str) -> str:
    return json.dumps(
        {
            "type": "admitted",
            "event_id": str(event_id),
            "admission_token": token,
            "admission_expires_at": expires_iso,
            "admission_extendable": True,  # a new admission: its one extension is there
        }
    )


def _expired(event_id: uuid.UUID | str) -> str:
    return expired_text(event_id=event_id, reason=EndReason.ADMISSION_WINDOW.value)


def admitted_tell(
    event_id: uuid.UUID | str, entries: list[tuple[uuid.UUID, uuid.UUID, datetime]]
) -> None:
    """Each (entry, customer, admission expiry) is told their time to choose,
    with a token that carries it and whether it may still be extended (best
    effort, as every push; the position endpoint answers the same). An
    offer's admission keeps its tier in the token."""
    found = QueueEntry.objects.filter(id__in=[entry_id for entry_id, _, _ in entries]).values_list(
        "id", "offer_tier_id", "extended_at"
    )
    offers = {entry_id: tier for entry_id, tier, _ in found if tier is not None}
    extended = {entry_id for entry_id, _, at in found if at is not None}
    send_many(
        [
            (
                customer_group(event_id, customer_id),
                {
                    "type": "admitted",
                    "event_id": str(event_id),
                    "admission_token": admission_token_issue(
                        event_id=uuid.UUID(str(event_id)),
                        customer_id=customer_id,
                        queue_entry_id=entry_id,
                        expires_at=until,
                        offer_tier_id=offers.get(entry_id),
                    ),
                    "admission_expires_at": until.isoformat(),
                    "admission_extendable": entry_id not in extended,
                },
            )
            for entry_id, customer_id, until in entries
        ]
    )


def _windows_given_back(
    event_id: uuid.UUID | str, given_back: list[tuple[uuid.UUID, uuid.UUID, datetime]]
) -> None:
    """After the clock gave windows back (committed): the admitted set gets
    the new expiries, and each customer is told their window."""
    queue_store().admitted_rescore(
        event_id=event_id,
        members=((str(customer_id), _ms(until)) for _, customer_id, until in given_back),
    )
    admitted_tell(event_id, given_back)


def _admitted_to_redis(event_id: uuid.UUID | str, *, served: int, wiped: bool) -> int:
    """Redis missed an admission Postgres committed (a tick stopped between
    its commit and its Lua step, or Redis lost its counter): every ADMITTED
    entry leaves the waiting set for the admitted set, the served counter
    catches up, and the customers it moved, who never heard of their
    admission, are told. Returns how many it moved."""
    rows = QueueEntry.objects.filter(event_id=event_id, status=QueueStatus.ADMITTED).values_list(
        "id", "customer_id", "admission_expires_at"
    )
    # An ADMITTED entry always has its expiry (the admitting UPDATE sets both).
    entries = [(entry_id, customer, until) for entry_id, customer, until in rows if until]
    moved = queue_store().readmit(
        event_id=event_id,
        members=[(str(customer_id), _ms(until)) for _, customer_id, until in entries],
        served=served,
    )
    if not moved:
        return 0
    told = set(moved)
    admitted_tell(event_id, [entry for entry in entries if str(entry[1]) in told])
    # After a wipe this is routine (the rebuild's share); otherwise a divergence.
    heal("queue_rebuilt" if wiped else "queue_divergence", len(moved))
    if not wiped:
        logger.warning(
            "queue divergence healed event=%s: %s admitted in Postgres, not in Redis",
            event_id,
            len(moved),
        )
    return len(moved)


def admission_tick_all() -> list[TickReport]:
    """Every live event, one after the other; one event failing does not stop
    the others."""
    reports = []
    live = Event.objects.filter(
        status__in=[EventStatus.ACTIVE, EventStatus.PAUSED, EventStatus.SOLD_OUT]
    ).values_list("id", flat=True)
    for event_id in live:
        try:
            reports.append(admission_tick_event(event_id=event_id))
        except Exception:
            logger.exception("admission tick failed event=%s", event_id)
    return reports
