"""The waiting-room page's rules (storefront/static/storefront/queue/line.js,
docs/API.md "The page's rules") in Python, for the flash-sale bench's
customers (bench/customers.py) and its protocol floor (bench/floor.py).

Pure like line.js: no clock, no network; ``now`` (ms) and ``random`` come
from the caller. Times are milliseconds, as in the page.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

HEAD_BATCHES = 2  # within this many batches of the head: every tick
FAR_MAX_MS = 30_000  # further back: at most this apart
FAR_MIN_MS = 10_000  # and at least this apart
JITTER_MS = 1_500  # after the tick, spread over this much
SLOW_MS = 60_000  # paused or sold out: about once a minute
PUSH_GRACE_MS = 2_000  # with the socket open: ask for the token only if no push came by then
DRAW_WITHIN_MS = 3_000  # the draw's document: read within this after the new epoch
DRAW_TRIES = 3  # reads of the draw's document (404/503) before asking instead


@dataclass(frozen=True)
class Place:
    place: int | None
    admitted: bool
    relearn: bool


def number_of(answer: dict[str, Any]) -> dict[str, Any]:
    """The page's number from a join's answer or a snapshot, with its draw key."""
    return {k: answer.get(k) for k in ("position", "served", "score", "epoch", "draw_key")}


def place_in(number: dict[str, Any] | None, state: dict[str, Any] | None) -> Place:
    """What ``state`` says to a page holding ``number`` (line.js placeIn)."""
    if not state:
        return Place(None, False, False)
    if (
        not number
        or not isinstance(number.get("position"), int)
        or not isinstance(number.get("served"), int)
        or not isinstance(number.get("score"), int)
        or number.get("epoch") is None
    ):
        return Place(None, False, True)
    if state.get("epoch") != number["epoch"] or state.get("served", 0) < number["served"]:
        return Place(None, False, True)
    frontier = state.get("frontier")
    admitted = isinstance(frontier, int) and frontier >= number["score"]
    place = max(1, number["position"] - (state["served"] - number["served"]))
    return Place(place, admitted, False)


def may_ask_again(last_answer_served: int | None, state: dict[str, Any] | None) -> bool:
    """line.js mayAskAgain: after a WAITING answer to the token question,
    ask again only once a later tick admitted someone."""
    return last_answer_served is None or bool(state and state["served"] > last_answer_served)


def next_read_ms(
    state: dict[str, Any] | None,
    place: int | None,
    now: float,
    random: Callable[[], float],
    sale_start: float = 0,
) -> float | None:
    """Milliseconds until the page reads the line state again; None: never
    (the sale ended). line.js nextReadMs."""
    if not state:
        return FAR_MIN_MS + random() * JITTER_MS
    if state.get("status") == "ENDED":
        return None
    if sale_start > now:
        return min(SLOW_MS, sale_start - now) + 250 + random() * JITTER_MS
    interval = max(1, state.get("interval_seconds") or 5) * 1000
    if state.get("status") in ("PAUSED", "SOLD_OUT"):
        return SLOW_MS + random() * SLOW_MS / 6
    next_tick = state.get("next_tick_at") or 0
    until_tick = next_tick - now if next_tick > now else interval / 2
    after_tick = until_tick + 250 + random() * JITTER_MS
    batch = max(1, state.get("admission_batch_size") or 1)
    if not isinstance(place, int) or place <= HEAD_BATCHES * batch:
        return after_tick
    measured = state.get("rate_per_second")
    rate = measured if measured and measured > 0 else batch / (interval / 1000)
    reach = (place - HEAD_BATCHES * batch) / rate * 1000
    far = min(FAR_MAX_MS, max(FAR_MIN_MS, reach))
    return max(after_tick, far + random() * JITTER_MS)


def relearn_delay_ms(state: dict[str, Any] | None, random: Callable[[], float]) -> float:
    """line.js relearnDelayMs: a random moment within the state's window."""
    within = max(1, (state or {}).get("relearn_within_seconds") or 5) * 1000
    return random() * within


def from_draw(number: dict[str, Any] | None, state: dict[str, Any] | None) -> bool:
    """line.js fromDraw: after the draw a page with a draw key reads its
    number from the draw's document instead of asking."""
    draw_key = (number or {}).get("draw_key")
    return (
        bool(draw_key)
        and bool(state)
        and (state or {}).get("epoch") == 1
        and (number or {}).get("epoch") != 1
    )


def draw_delay_ms(state: dict[str, Any] | None, random: Callable[[], float]) -> float:
    """line.js drawDelayMs: within min(the state's window, 3 s)."""
    within = max(1, (state or {}).get("relearn_within_seconds") or 5) * 1000
    return random() * min(DRAW_WITHIN_MS, within)


def draw_place(draw_key: str) -> tuple[str, str]:
    """(shard, entry): the hex digits of SHA-256(draw key), as the page takes them."""
    digest = hashlib.sha256(draw_key.encode()).hexdigest()
    return digest[:2], digest[2:16]


def number_from_draw(
    doc: dict[str, Any] | None, entry: str, draw_key: str | None = None
) -> dict[str, Any] | None:
    """line.js numberFromDraw: the number the draw's document gives, or None."""
    rank = ((doc or {}).get("entries") or {}).get(entry)
    if not isinstance(rank, int) or not isinstance((doc or {}).get("served"), int):
        return None
    assert doc is not None
    return {
        "position": rank,
        "served": doc["served"],
        "score": rank,
        "epoch": doc.get("epoch"),
        "draw_key": draw_key,
    }
