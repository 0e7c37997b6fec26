"""The pre-queue draw's results as public documents
(``GET events/{id}/queue/draw/{shard}/``), so a pre-queue page learns its
number after the draw without an authenticated request.

Each pre-queue customer holds a **draw key**, ``HMAC(key from SECRET_KEY,
"draw:{event}:{customer}")``: the same on every join and reload, given only
to that customer (the join's answer and their waiting snapshots). Its
SHA-256 names where the customer's rank is: the first two hex digits the
shard (256 of them), the next 14 the entry in it. The documents reveal ranks
keyed by hashes of secrets only their owners hold.

The draw writes the 256 documents once (``draw_publish``, after the draw's
Postgres commit, with the scores' copy to Redis: repaired by the next tick
like the rest of it). They never change: a customer who left after the draw
stays in them (someone who left ahead only makes the truth better), so a web
process keeps every shard it read (at most one Redis read per process per
shard). When Redis lost them (a wipe), the first read rebuilds all 256 from
Postgres under a lock (``drawing``); the reads that come meanwhile are
answered busy, and their pages learn their number the authenticated way.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import threading
import uuid
from functools import lru_cache

from django.conf import settings

from events.models import EventStatus
from fairqueue.errors import Busy, ErrorCode, NotFound
from fairqueue.redis import RedisUnavailable
from queueing.models import QueueEntry
from queueing.selectors import EventSnapshot, event_snapshot
from queueing.store import queue_store

# The HMAC's salt: the key is derived from SECRET_KEY as Django's
# ``salted_hmac`` derives it (tests/queueing/test_draw.py compares them).
KEY_SALT = "fairqueue.queueing.draw"
SHARDS = 256
ENTRY_HEX = 14  # 56 bits: a collision in a shard is one in billions
# Seconds a cache may keep a document: it never changes after the draw.
MAX_AGE_SECONDS = 300
# A drawn score is a rank, 1..N; a score below this is a rank (a join time
# in microseconds since 1970 is above 10^15).
RANK_BELOW = 10**12
REBUILD_LOCK_MS = 30_000
HOLD_MAX_ENTRIES = 20 * SHARDS

# Per process: (event id, shard) -> the document as the draw wrote it.
_held: dict[tuple[str, str], bytes] = {}
_building = threading.Lock()  # with Redis down: one rebuild per process at a time


@lru_cache(maxsize=4)
def _hmac_key(secret: str) -> bytes:
    return hashlib.sha256((KEY_SALT + secret).encode()).digest()


def draw_key(*, event_id: uuid.UUID | str, customer_id: uuid.UUID | str) -> str:
    """The customer's draw key for the event (64 hex digits)."""
    message = f"draw:{event_id}:{customer_id}".encode()
    return hmac.new(_hmac_key(settings.SECRET_KEY), message, hashlib.sha256).hexdigest()


def draw_place(key: str) -> tuple[str, str]:
    """(shard, entry) of a draw key: the hex digits of its SHA-256."""
    digest = hashlib.sha256(key.encode()).hexdigest()
    return digest[:2], digest[2 : 2 + ENTRY_HEX]


def in_the_draw(*, event: EventSnapshot, score: int | None) -> bool:
    """Is a waiting number a pre-queue one: a join before the sale started
    (before the draw), or a rank (after it)? Later joiners' scores are join
    times after the start."""
    if event.prequeue_opens_at is None or score is None:
        return False
    return score < int(event.sale_start.timestamp() * 1_000_000)


def number_draw_key(
    *, event_id: uuid.UUID | str, customer_id: uuid.UUID | str, score: int | None
) -> str | None:
    """The draw key a waiting snapshot carries: the customer's while the
    number is a pre-queue one, else None."""
    event = event_snapshot(event_id=event_id)
    if event is None or not in_the_draw(event=event, score=score):
        return None
    return draw_key(event_id=event.id, customer_id=customer_id)


def draw_docs(*, event_id: uuid.UUID | str) -> dict[str, str]:
    """The 256 documents, from Postgres: every entry the draw ranked,
    whatever it became since. Two keys on one entry id (one in billions)
    are both left out: their pages learn their number the other way."""
    rows = QueueEntry.objects.filter(
        event_id=event_id, prequeue=True, score__lt=RANK_BELOW
    ).values_list("customer_id", "score")
    shards: list[dict[str, int]] = [{} for _ in range(SHARDS)]
    twice: set[tuple[int, str]] = set()
    for customer_id, score in rows.iterator(chunk_size=10_000):
        shard, entry = draw_place(draw_key(event_id=event_id, customer_id=customer_id))
        entries = shards[int(shard, 16)]
        if entry in entries:
            twice.add((int(shard, 16), entry))
        entries[entry] = score
    for index, entry in twice:
        del shards[index][entry]
    # The draw comes before the first admission (the tick draws, then
    # admits; nothing is admitted before the sale starts): served is 0.
    return {
        f"{index:02x}": json.dumps(
            {
                "event_id": str(event_id),
                "epoch": 1,
                "served": 0,
                "entries": dict(sorted(e.items())),
            },
            separators=(",", ":"),
        )
        for index, e in enumerate(shards)
    }


def draw_publish(*, event_id: uuid.UUID | str) -> None:
    """The draw's write (after its Postgres commit): all 256 documents in
    one HSET, the same bytes however often. RedisUnavailable: the caller's
    next tick tries again."""
    queue_store().draw_set(event_id=event_id, docs=draw_docs(event_id=event_id))


def draw_shard_held(*, event_id: uuid.UUID | str, shard: str) -> bytes | None:
    """The shard's document from this process' memory, else one Redis read;
    None when Redis has none (or could not be asked): ``draw_shard_answer``
    decides."""
    key = (str(event_id), shard)
    held = _held.get(key)
    if held is not None:
        return held
    try:
        text = queue_store().draw_shard(event_id=event_id, shard=shard)
    except RedisUnavailable:
        return None
    if text is None:
        return None
    body = text.encode()
    _hold(key, body)
    return body


def _hold(key: tuple[str, str], body: bytes) -> None:
    if len(_held) >= HOLD_MAX_ENTRIES:
        _held.clear()
    _held[key] = body


def draw_shard_answer(*, event_id: uuid.UUID | str, shard: str) -> bytes:
    """The shard's document: held, read, or rebuilt from Postgres once.
    NotFound: no such event (``event_not_found``), or no draw yet
    (``draw_not_made``); Busy: another rebuild is under way."""
    body = draw_shard_held(event_id=event_id, shard=shard)
    if body is not None:
        return body
    event = event_snapshot(event_id=event_id)
    if event is None or event.status == EventStatus.DRAFT:
        raise NotFound("No such event.", code=ErrorCode.EVENT_NOT_FOUND)
    if event.prequeue_shuffled_at is None:
        raise NotFound("The pre-queue has not been drawn.", code=ErrorCode.DRAW_NOT_MADE)
    docs = _rebuild(event.id, shard)
    for name, text in docs.items():
        _hold((str(event.id), name), text.encode())
    return docs[shard].encode()


def _rebuild(event_id: uuid.UUID, shard: str) -> dict[str, str]:
    """The documents from Postgres, stored again: by one caller at a time
    (Redis' lock; with Redis down, this process' own)."""
    store = queue_store()
    try:
        claimed = store.drawing_claim(event_id=event_id, ttl_ms=REBUILD_LOCK_MS)
    except RedisUnavailable:
        return _rebuild_here(event_id)
    if not claimed:
        raise Busy("The draw's documents are being rebuilt; retry shortly.")
    try:
        # A rebuild that finished between this caller's read and its lock.
        done = store.draw_shard(event_id=event_id, shard=shard)
        if done is not None:
            return {shard: done}
        docs = draw_docs(event_id=event_id)
        with contextlib.suppress(RedisUnavailable):  # answered all the same
            store.draw_set(event_id=event_id, docs=docs)
        return docs
    finally:
        store.drawing_release(event_id=event_id)


def _rebuild_here(event_id: uuid.UUID) -> dict[str, str]:
    if not _building.acquire(blocking=False):
        raise Busy("The draw's documents are being rebuilt; retry shortly.")
    try:
        return draw_docs(event_id=event_id)
    finally:
        _building.release()


def draw_forget() -> None:
    """Drop this process' copies (tests)."""
    _held.clear()
