"""The Redis side of the waiting room: one small class, its Lua scripts next
to it (``lua/*.lua``), every key of an event under the event's hash tag.

Keys (``fq:{<event_id>}:queue:...``):
- ``waiting``: sorted set, member = customer id, score = ``QueueEntry.score``.
- ``admitted``: sorted set, member = customer id, score = admission expiry (ms).
- ``served``: how many customers were admitted so far (clients subtract it);
  written as Postgres counts it (``AdmissionState.served``), never lower.
- ``ticks`` / ``rate``: recent admission ticks and the admission rate they give.
- ``lock``: the event's single-flight lock (tick, reconciliation; fairqueue.locks).
- ``shuffled``: marker that the pre-queue shuffle reached Redis.
- ``line``: marker that the waiting set holds the whole line: set by the
  rebuild and the reconciliation once they wrote it from Postgres, gone with
  a wipe. Without it a rank from the set is not an answer (after a wipe the
  set holds only who joined since): joins and position reads answer from
  Postgres, and the next admission tick rebuilds the line.
- ``checked``: present while the last full reconciliation is recent.
- ``state``: the public line state, JSON bytes written once per tick and
  answered as they are (``queueing.line_state``).
- ``draw``: hash, field = shard (two hex digits), value = that shard's
  document of the pre-queue draw (``queueing.services.draw``); all 256
  written in one HSET. ``drawing``: the lock of its rebuild from Postgres.

Everything here can be rebuilt from Postgres (invariant 2).

The Redis-failure rule (``fairqueue.redis``): the hot-path and tick methods
are ``@best_effort`` (their callers answer from Postgres, and the
reconciliation heals Redis later); the rebuild and reconciliation methods,
which are nothing but Redis work, are ``@required`` (``RedisUnavailable``).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import redis

from fairqueue.redis import RedisStore, best_effort, event_key, required, text

REBUILD_BATCH = 10_000
PIPELINE_BATCHES = 10


@dataclass(frozen=True)
class JoinAnswer:
    rank: int | None  # None: already in the admitted set (a tick beat the join's add)
    rate: float | None
    served: int | None
    line_built: bool  # False: the rank is not an answer (the line is not rebuilt yet)
    epoch: int = 0  # 1 once the pre-queue draw reached Redis


@dataclass(frozen=True)
class PositionAnswer:
    rank: int | None  # None too while the line is not rebuilt
    admitted_until_ms: int | None
    rate: float | None
    served: int | None
    score: int | None = None  # the customer's score in the waiting set
    epoch: int = 0  # 1 once the pre-queue draw reached Redis


@dataclass(frozen=True)
class AdmitAnswer:
    served: int | None  # as Redis has it; None: no counter
    rate: float | None
    behind: bool  # an earlier admission never reached Redis: readmit
    line_built: bool  # False: the line marker is gone, the line needs a rebuild
    waiting: int | None = None  # the waiting set's size (None: the line is not built)


def _float(value: str | bytes | None) -> float | None:
    return float(value) if value is not None else None


def _int(value: str | bytes | None) -> int | None:
    return int(value) if value is not None else None


class QueueStore(RedisStore):
    scripts_dir = Path(__file__).parent / "lua"
    script_names = ("join", "position", "admit", "readmit")

    # --- keys -------------------------------------------------------------
    @staticmethod
    def waiting_key(event_id: object) -> str:
        return event_key(event_id, "queue", "waiting")

    @staticmethod
    def admitted_key(event_id: object) -> str:
        return event_key(event_id, "queue", "admitted")

    @staticmethod
    def served_key(event_id: object) -> str:
        return event_key(event_id, "queue", "served")

    @staticmethod
    def ticks_key(event_id: object) -> str:
        return event_key(event_id, "queue", "ticks")

    @staticmethod
    def rate_key(event_id: object) -> str:
        return event_key(event_id, "queue", "rate")

    @staticmethod
    def lock_key(event_id: object) -> str:
        return event_key(event_id, "queue", "lock")

    @staticmethod
    def checked_key(event_id: object) -> str:
        return event_key(event_id, "queue", "checked")

    @staticmethod
    def shuffled_key(event_id: object) -> str:
        return event_key(event_id, "queue", "shuffled")

    @staticmethod
    def line_key(event_id: object) -> str:
        return event_key(event_id, "queue", "line")

    @staticmethod
    def state_key(event_id: object) -> str:
        return event_key(event_id, "queue", "state")

    @staticmethod
    def draw_key(event_id: object) -> str:
        return event_key(event_id, "queue", "draw")

    @staticmethod
    def drawing_key(event_id: object) -> str:
        return event_key(event_id, "queue", "drawing")

    # --- hot path ---------------------------------------------------------
    @best_effort(False)
    def ping(self) -> bool:
        """Is Redis reachable right now?"""
        return bool(self.r.ping())

    @best_effort(None)
    def join(
        self,
        *,
        event_id: object,
        customer_id: object,
        score: int,
        cache: tuple[str, list[Any]] | None = None,
    ) -> JoinAnswer:
        """Add to the waiting line, unless a tick already moved the customer to
        the admitted set (its Postgres row was committed before this add).
        ``cache``: a hash key and the arguments of customers/lua/auth_fill.lua
        (the customer's sign-out state, as the join's INSERT read it), cached
        in the same round trip; not on a cluster (another node holds it)."""
        keys = [
            self.waiting_key(event_id),
            self.rate_key(event_id),
            self.served_key(event_id),
            self.admitted_key(event_id),
            self.line_key(event_id),
            self.shuffled_key(event_id),
        ]
        args = [score, str(customer_id)]
        if cache is not None and not isinstance(self.r, redis.RedisCluster):
            keys.append(cache[0])
            args += cache[1]
        rank, rate, served, line, epoch = self.scripts["join"](keys=keys, args=args)
        rank = int(rank)
        return JoinAnswer(
            rank=rank if rank >= 0 else None,
            rate=_float(rate),
            served=_int(served),
            line_built=bool(line),
            epoch=int(epoch),
        )

    @best_effort(None)
    def rescore(self, *, event_id: object, customer_id: object, score: int) -> None:
        """A waiting member's score changed in Postgres (the pre-queue shuffle)."""
        self.r.zadd(self.waiting_key(event_id), {str(customer_id): score}, xx=True)

    @best_effort(None)
    def position(self, *, event_id: object, customer_id: object) -> PositionAnswer:
        reply = self.scripts["position"](
            keys=list(_position_keys(str(event_id))), args=[str(customer_id)]
        )
        return self._position_answer(reply)

    @staticmethod
    def _position_answer(reply: list) -> PositionAnswer:
        rank, admitted_until, rate, served, score, epoch = reply
        return PositionAnswer(
            rank=_int(rank),
            admitted_until_ms=int(float(admitted_until)) if admitted_until is not None else None,
            rate=_float(rate),
            served=_int(served),
            score=int(float(score)) if score is not None else None,
            epoch=int(epoch),
        )

    @best_effort(None)
    def position_with(
        self,
        *,
        event_id: object,
        customer_id: object,
        hash_key: str,
        fields: list[str],
        bucket_key: str,
        bucket_args: list,
    ) -> tuple[PositionAnswer, list, int] | None:
        """``position``, the caller's HMGET of ``fields`` of ``hash_key`` and
        a token from the bucket at ``bucket_key`` (``bucket_args``: see
        customers/lua/bucket_take.lua) in the same script (one command, one
        round trip); (answer, the values, the bucket's wait in ms: 0 when the
        token was taken, else no place was read). None on a cluster (the hash
        and the bucket are on other nodes: the caller reads one after the
        other) or when Redis could not be asked."""
        if isinstance(self.r, redis.RedisCluster):
            return None
        reply = self.scripts["position"](
            keys=[*_position_keys(str(event_id)), hash_key, bucket_key],
            args=[str(customer_id), *bucket_args, *fields],
        )
        return self._position_answer(reply[:6]), reply[6], int(reply[7])

    @best_effort(None)
    def leave(self, *, event_id: object, customer_id: object) -> None:
        self.r.zrem(self.waiting_key(event_id), str(customer_id))

    @best_effort(None)
    def admitted_until_ms(self, *, event_id: object, customer_id: object) -> int | None:
        score = self.r.zscore(self.admitted_key(event_id), str(customer_id))
        return int(score) if score is not None else None

    @best_effort(None)
    def release_admitted(self, *, event_id: object, customer_ids: Iterable[object]) -> None:
        members = [str(c) for c in customer_ids]
        if members:
            self.r.zrem(self.admitted_key(event_id), *members)

    # --- admission --------------------------------------------------------
    @best_effort(None)
    def admit(
        self,
        *,
        event_id: object,
        customer_ids: list[str],
        served: int,
        expires_ms: int,
        now_ms: int,
        duration_ms: int,
        interval_ms: int,
        window_ms: int,
        sample: bool = True,
    ) -> AdmitAnswer:
        """Atomic move waiting -> admitted, plus the tick sample when
        ``sample`` (the tick could admit); the served counter becomes
        ``served`` (Postgres' count after this tick) unless it is already
        higher, or Redis is behind (``lua/admit.lua``)."""
        served_now, rate, behind, line, waiting = self.scripts["admit"](
            keys=[
                self.waiting_key(event_id),
                self.admitted_key(event_id),
                self.served_key(event_id),
                self.ticks_key(event_id),
                self.rate_key(event_id),
                self.line_key(event_id),
            ],
            args=[
                expires_ms,
                now_ms,
                duration_ms,
                interval_ms,
                window_ms,
                served,
                int(sample),
                *customer_ids,
            ],
        )
        served_now = int(served_now)
        return AdmitAnswer(
            served=served_now if served_now >= 0 else None,
            rate=_float(rate),
            behind=bool(behind),
            line_built=bool(line),
            waiting=int(waiting) if line else None,
        )

    @best_effort(None)
    def readmit(
        self, *, event_id: object, members: list[tuple[str, int]], served: int
    ) -> list[str]:
        """Every ADMITTED entry (member, admission expiry in ms) out of the
        line and into the admitted set, then the served counter up to
        ``served`` (``lua/readmit.lua``), in batches. Returns the members
        that were not in the admitted set with that expiry."""
        keys = [self.waiting_key(event_id), self.admitted_key(event_id), self.served_key(event_id)]
        starts = range(0, len(members), REBUILD_BATCH)
        batches = [members[i : i + REBUILD_BATCH] for i in starts] or [[]]
        moved: list[str] = []
        for index, batch in enumerate(batches):
            last = index == len(batches) - 1
            args: list[str | int] = [served if last else -1]
            for member, score in batch:
                args += [member, score]
            moved += [text(m) for m in self.scripts["readmit"](keys=keys, args=args)]
        return moved

    @best_effort(None)
    def admitted_rescore(self, *, event_id: object, members: Iterable[tuple[str, int]]) -> None:
        """Admission expiries that changed in Postgres (windows given back)."""
        mapping = dict(members)
        if mapping:
            self.r.zadd(self.admitted_key(event_id), mapping)

    @best_effort(None)
    def state(self, *, event_id: object) -> str | None:
        """The public line state as stored (one GET); None when missing or
        when Redis could not be asked."""
        body = self.r.get(self.state_key(event_id))
        return text(body) if body is not None else None

    @best_effort(None)
    def state_set(self, *, event_id: object, body: str, ttl_ms: int) -> None:
        self.r.set(self.state_key(event_id), body, px=ttl_ms)

    @best_effort(None)
    def state_add(self, *, event_id: object, body: str, ttl_ms: int) -> None:
        """Store the state unless one is there (a tick's is fresher)."""
        self.r.set(self.state_key(event_id), body, px=ttl_ms, nx=True)

    @required
    def draw_shard(self, *, event_id: object, shard: str) -> str | None:
        """One shard's document of the pre-queue draw (one HGET); None when
        missing (not written yet, or wiped)."""
        body = self.r.hget(self.draw_key(event_id), shard)
        return text(body) if body is not None else None

    @required
    def draw_set(self, *, event_id: object, docs: dict[str, str]) -> None:
        """Every shard's document in one HSET: all of them or none."""
        fields: dict[Any, str] = dict(docs)  # redis-py's mapping type takes any field type
        self.r.hset(self.draw_key(event_id), mapping=fields)

    @required
    def drawing_claim(self, *, event_id: object, ttl_ms: int) -> bool:
        """The rebuild's lock (SET NX): True for one caller at a time."""
        return bool(self.r.set(self.drawing_key(event_id), "1", nx=True, px=ttl_ms))

    @best_effort(None)
    def drawing_release(self, *, event_id: object) -> None:
        self.r.delete(self.drawing_key(event_id))

    @best_effort(None)
    def served_init(self, *, event_id: object, served: int) -> None:
        self.r.set(self.served_key(event_id), served, nx=True)

    @best_effort(None)
    def served(self, *, event_id: object) -> int | None:
        return _int(self.r.get(self.served_key(event_id)))

    @best_effort(None)
    def rate(self, *, event_id: object) -> float | None:
        return _float(self.r.get(self.rate_key(event_id)))

    @best_effort(None)
    def shuffle_reached_redis(self, *, event_id: object) -> bool:
        """None when Redis could not be asked."""
        return bool(self.r.exists(self.shuffled_key(event_id)))

    @required
    def shuffle_mark(self, *, event_id: object) -> None:
        self.r.set(self.shuffled_key(event_id), "1")

    @required
    def line_built(self, *, event_id: object) -> bool:
        """Does the waiting set hold the whole line (see ``line`` above)?"""
        return bool(self.r.exists(self.line_key(event_id)))

    @required
    def line_mark(self, *, event_id: object) -> None:
        """The waiting set now holds the whole line (see ``line`` above)."""
        self.r.set(self.line_key(event_id), "1")

    @best_effort(None)
    def line_length(self, *, event_id: object) -> int | None:
        """Customers in the waiting set; None when Redis could not be asked
        or does not hold the whole line."""
        pipe = self.r.pipeline(transaction=False)
        pipe.exists(self.line_key(event_id))
        pipe.zcard(self.waiting_key(event_id))
        built, waiting = pipe.execute()
        return int(waiting) if built else None

    @best_effort(None)
    def places(
        self, *, event_id: object, customer_ids: list[str]
    ) -> tuple[int | None, dict[str, int]] | None:
        """(served, {customer: rank + 1}) of those in the waiting set, read in
        one round trip (one ZRANK each; served None without a counter); None
        when Redis could not be asked or does not hold the whole line."""
        pipe = self.r.pipeline(transaction=False)
        pipe.exists(self.line_key(event_id))
        pipe.get(self.served_key(event_id))
        for customer in customer_ids:
            pipe.zrank(self.waiting_key(event_id), customer)
        built, served, *ranks = pipe.execute()
        if not built:
            return None
        places = {c: int(r) + 1 for c, r in zip(customer_ids, ranks, strict=True) if r is not None}
        return _int(served), places

    # --- rebuild / reconcile ----------------------------------------------
    @best_effort(None)
    def sizes(self, *, event_id: object) -> tuple[int, int]:
        """(waiting, admitted) set sizes; None when Redis could not be asked."""
        pipe = self.r.pipeline(transaction=False)
        pipe.zcard(self.waiting_key(event_id))
        pipe.zcard(self.admitted_key(event_id))
        waiting, admitted = pipe.execute()
        return int(waiting), int(admitted)

    @required
    def size(self, *, key: str) -> int:
        return int(self.r.zcard(key))

    @required
    def full_check_due(self, *, event_id: object, every_seconds: int) -> bool:
        """True at most once per ``every_seconds`` (and right after a wipe)."""
        return bool(self.r.set(self.checked_key(event_id), "1", nx=True, ex=every_seconds))

    @required
    def add_many(
        self, *, key: str, members: Iterable[tuple[str, int]], only_existing: bool = False
    ) -> int:
        """ZADD in batches of ``REBUILD_BATCH``, PIPELINE_BATCHES batches per
        round trip (redis-py's pipeline; hiredis packs the commands). Same
        member, same score: idempotent. Returns the members sent."""
        pipe = self.r.pipeline(transaction=False)
        flags = ["XX"] if only_existing else []
        sent = 0
        rows = iter(members)
        while batch := list(itertools.islice(rows, REBUILD_BATCH)):
            pipe.execute_command(
                "ZADD",
                key,
                *flags,
                *itertools.chain.from_iterable((score, member) for member, score in batch),
            )
            sent += len(batch)
            if len(pipe) >= PIPELINE_BATCHES:
                pipe.execute()
        pipe.execute()
        return sent

    @required
    def scan_chunk(self, *, key: str, cursor: int) -> tuple[int, list[str]]:
        """One ZSCAN step over a sorted set (no long block on Redis): the next
        cursor (0 at the end) and the members of this chunk."""
        cursor, chunk = self.r.zscan(key, cursor=cursor, count=REBUILD_BATCH)
        pairs = cast(list[tuple[str | bytes, float]], chunk)  # (member, score)
        return int(cursor), [text(member) for member, _ in pairs]

    def scan_members(self, *, key: str) -> Iterator[list[str]]:
        """Members of a sorted set in chunks."""
        cursor = 0
        while True:
            cursor, chunk = self.scan_chunk(key=key, cursor=cursor)
            if chunk:
                yield chunk
            if cursor == 0:
                return

    @required
    def members_page(self, *, key: str, start: int, count: int) -> list[tuple[str, int]]:
        """(member, score) of one page of a sorted set, in its order (the
        invariant check walks the waiting line this way)."""
        # WITHSCORES: pairs, which redis-py's return type (one for every flag) cannot say.
        page = cast(
            list[tuple[str | bytes, float]],
            self.r.zrange(key, start, start + count - 1, withscores=True),
        )
        return [(text(member), int(score)) for member, score in page]

    @required
    def remove_many(self, *, key: str, members: list[str]) -> int:
        removed = 0
        for start in range(0, len(members), REBUILD_BATCH):
            removed += int(self.r.zrem(key, *members[start : start + REBUILD_BATCH]))
        return removed

    @best_effort(None)
    def drop_event(self, *, event_id: object) -> None:
        """The line of an event that ended: its sets go (the reconciliation
        drops them again if this fails)."""
        self.r.delete(
            self.waiting_key(event_id),
            self.admitted_key(event_id),
            self.rate_key(event_id),
            self.ticks_key(event_id),
            self.line_key(event_id),
            self.state_key(event_id),
            self.draw_key(event_id),
        )


@functools.lru_cache(maxsize=256)  # the events on sale: a position read per waiting customer
def _position_keys(event_id: str) -> tuple[str, ...]:
    """The keys of ``lua/position.lua`` (KEYS[1..6]), built once per event."""
    return (
        QueueStore.waiting_key(event_id),
        QueueStore.admitted_key(event_id),
        QueueStore.rate_key(event_id),
        QueueStore.served_key(event_id),
        QueueStore.line_key(event_id),
        QueueStore.shuffled_key(event_id),
    )


_store: QueueStore | None = None


def queue_store() -> QueueStore:
    global _store
    if _store is None:
        _store = QueueStore()
    return _store
