"""The protocol floor of a flash sale: the bench's own customers (arrivals,
behaviours, socket or not) and the sale's admission rules replayed at zero
CPU, so the measured times have something to be compared with.

Every request is answered at once and every tick takes no time; what is left
is what the rules themselves cost:

- ticks every ``interval`` seconds from the sale's start plus ``tick_phase``
  (the beat's phase, as measured; 0: the most favourable); before the first,
  nobody is admitted;
- the pre-queue is drawn (shuffled) at the first tick; later arrivals queue
  by their join time;
- a tick first lapses admissions older than the time to choose (``window``:
  the event's, its slot to the next in line at that same tick), then admits
  ``min(batch, max_active - admitted, free - admitted)`` in line order
  (``queueing.domain.admission_capacity``, as ``queueing/services/admission.py``);
- a customer with a socket learns of its admission at the tick (the push);
  one without learns at its next read of the line state, read by the page's
  rules (bench/page.py): after the draw a pre-queue page reads its number
  from the draw's public document (its draw key) at a random moment within
  ``min(relearn_within_seconds, 3 s)`` (with ``draw_documents`` off, or a
  page without a key, it asks for it again within ``relearn_within_seconds``,
  and that answer carries the token when it was admitted meanwhile), and a
  SOLD_OUT state is read again only about once a minute;
- having learnt, a customer claims at once and then behaves as drawn: pays
  (sold), declines, lets the claim lapse or abandons the payment (a declined
  payment keeps the claim, so the tickets are free again at the first expiry
  sweep after the claim's TTL, sweeps every ``expiry_interval`` from the
  start), lets
  the admission lapse (a forgotten tab: its slot is held until its time to
  choose ends, and it never asks for the extension), or leaves
  the queue 1 to 20 s after joining.

Deterministic for a seed. Times are seconds since the run's first arrival
(as the customers' ``arrive_at``); the result's are from the sale's start.
"""

from __future__ import annotations

import bisect
import heapq
import math
import os
import random
from dataclasses import dataclass, field
from typing import Any

from bench import page

PAY, LAPSE, LEAVE = "pay", "lapse_admission", "abandon_queue"
HOLD_UNTIL_TTL = ("expire_claim", "abandon_payment", "decline")
RATE_WINDOW_SECONDS = 60.0  # queueing/services/admission.py


@dataclass(frozen=True)
class Rules:
    inventory: int
    batch_size: int
    interval: float = 5.0
    window: float = 120.0  # the time to choose (events.domain.CHOOSE_SECONDS_DEFAULT)
    claim_ttl: float = 600.0
    expiry_interval: float = 30.0
    sale_start: float = 0.0  # seconds after the first arrival
    tick_phase: float = 0.0  # the first tick this long after the start (the beat's phase)
    max_active: int | None = None  # None: the inventory (as the bench makes its events)
    relearn_per_second: float = 1000.0  # QUEUE_RELEARN_PER_SECOND
    relearn_max: float = 60.0  # queueing.domain.RELEARN_MAX_SECONDS
    draw_documents: bool = True  # pre-queue pages read their number from the draw's documents
    until: float = 3600.0  # stop the replay this long after the sale's start


@dataclass(frozen=True)
class Person:
    arrive_at: float
    behaviour: str = PAY
    ws: bool = False
    leave_after: float = 10.0  # abandon_queue: seconds after joining


@dataclass
class Tick:
    at: float  # from the sale's start
    capacity: int
    admitted: int
    admitted_before: int  # admitted and not yet claimed, before the tick (after lapses)
    free_before: int  # tickets neither held nor sold, before the tick


@dataclass
class Floor:
    rules: Rules
    sold: list[tuple[float, int]] = field(default_factory=list)  # (from the start, sold)
    ticks: list[Tick] = field(default_factory=list)
    learnt: int = 0
    reads: int = 0  # line-state reads by pages without a socket
    relearns: int = 0  # the number asked again (authenticated)
    draw_reads: int = 0  # the number read from the draw's documents (public)

    def time_to(self, share: float) -> float | None:
        """Seconds from the sale's start until ``share`` of the tickets were sold."""
        goal = math.ceil(share * self.rules.inventory)
        return next((t for t, n in self.sold if n >= goal), None)


def replay(people: list[Person], rules: Rules, seed: int = 1) -> Floor:
    return _Replay(people, rules, seed).run()


class _Replay:
    def __init__(self, people: list[Person], rules: Rules, seed: int) -> None:
        self.people, self.r, self.seed = people, rules, seed
        self.rng = random.Random(seed)
        self.floor = Floor(rules)
        self.heap: list[tuple[float, int, str, int]] = []
        self.seq = 0
        self.prequeue: list[int] = []
        self.order: list[int] = []  # the line, after the draw
        self.index: dict[int, int] = {}  # person -> place in ``order``
        self.head = 0  # every entry of ``order`` before it was admitted or left
        self.left: list[int] = []  # sorted indexes in ``order`` of those who left waiting
        self.gone: set[int] = set()  # left (never claim)
        self.admitted_at: dict[int, float] = {}  # admitted, not claimed yet
        self.number: dict[int, dict[str, Any]] = {}  # pages without a socket
        self.drawn = False
        self.free = rules.inventory
        self.sold = 0
        self.served = 0
        # (tick time, admitted) of the ticks that could admit: the measured rate
        self.samples: list[tuple[float, int]] = []
        self.tick_times: list[float] = []  # every tick's time, its line state and the head after it
        self.states: list[dict[str, Any]] = []
        self.heads: list[int] = []
        self.before: dict[str, Any] = {}

    # --- events ---------------------------------------------------------------------
    def at(self, t: float, kind: str, who: int = -1) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, who))

    def run(self) -> Floor:
        r = self.r
        for i, p in enumerate(self.people):
            self.at(p.arrive_at, "arrive", i)
        self.at(r.sale_start + r.tick_phase, "tick")
        self.before = self._publish(0.0, "ACTIVE")  # before the sale: epoch 0, nobody served
        end = r.sale_start + r.until
        while self.heap and self.sold < r.inventory:
            t, _, kind, who = heapq.heappop(self.heap)
            if t > end:
                break
            getattr(self, f"_{kind}")(t, who)
        return self.floor

    def _arrive(self, t: float, i: int) -> None:
        p = self.people[i]
        if not self.drawn:
            self.prequeue.append(i)
            # The pre-queue's number: a score of epoch 0, learnt again after
            # the draw (from the draw's documents: its key says where).
            number = {"position": len(self.prequeue), "served": 0, "score": i, "epoch": 0}
            number["draw_key"] = f"{i}" if self.r.draw_documents else None
        else:
            self._enqueue(i)
            number = self._number(i, self.head, self.served)
        if p.behaviour == LEAVE:
            self.at(t + p.leave_after, "leave", i)
        if not p.ws:
            self.number[i] = number

    def _enqueue(self, i: int) -> None:
        self.index[i] = len(self.order)
        self.order.append(i)

    def _number(self, i: int, head: int, served: int) -> dict[str, Any]:
        """The number a snapshot answers when the line's head is at ``head``:
        the place counts out those who left ahead (the ones known so far)."""
        idx = self.index[i]
        left_between = bisect.bisect_left(self.left, idx) - bisect.bisect_left(self.left, head)
        position = idx - head - left_between + 1
        return {"position": position, "served": served, "score": idx + 1, "epoch": 1}

    def _leave(self, t: float, i: int) -> None:
        self.gone.add(i)
        if i in self.admitted_at:
            del self.admitted_at[i]
        elif i in self.index and self.index[i] >= self.head:
            bisect.insort(self.left, self.index[i])

    # --- the tick -------------------------------------------------------------------
    def _tick(self, t: float, _: int) -> None:
        r = self.r
        if not self.drawn:
            self.drawn = True
            self.rng.shuffle(self.prequeue)
            for i in self.prequeue:
                if i in self.gone:
                    bisect.insort(self.left, len(self.order))
                self._enqueue(i)
        for i, admitted in list(self.admitted_at.items()):
            if t >= admitted + r.window:
                del self.admitted_at[i]
                self.gone.add(i)
        admitted_now = len(self.admitted_at)
        max_active = r.max_active if r.max_active is not None else r.inventory
        capacity = max(0, min(r.batch_size, max_active - admitted_now, self.free - admitted_now))
        status = "SOLD_OUT" if self.free == 0 else "ACTIVE"
        if status != "ACTIVE":
            capacity = 0
        n, admitted = 0, []
        while n < capacity and self.head < len(self.order):
            i = self.order[self.head]
            self.head += 1
            if i in self.gone:
                continue
            self.admitted_at[i] = t
            n += 1
            admitted.append(i)
        self.served += n
        if capacity > 0:
            self.samples.append((t, n))
        self.floor.ticks.append(Tick(t - r.sale_start, capacity, n, admitted_now, self.free))
        state = self._publish(t, status)
        self.tick_times.append(t)
        self.states.append(state)
        self.heads.append(self.head)
        for i in admitted:
            p = self.people[i]
            if p.behaviour in (LAPSE, LEAVE):
                continue  # they never claim: the slot is held until the time to choose ends
            # the push, or the page's reads
            self.at(t if p.ws else self._learns_at(i, t), "learn", i)
        self.at(t + r.interval, "tick")

    def _publish(self, t: float, status: str) -> dict[str, Any]:
        r = self.r
        recent = [(at, n) for at, n in self.samples if t - at <= RATE_WINDOW_SECONDS]
        rate = None
        if recent:
            rate = sum(n for _, n in recent) / (t - recent[0][0] + r.interval)
        left_behind = len(self.left) - bisect.bisect_left(self.left, self.head)
        waiting = len(self.order) - self.head - left_behind
        spread = waiting / r.relearn_per_second if r.relearn_per_second > 0 else r.relearn_max
        return {
            "status": status,
            "epoch": 1 if self.drawn else 0,
            "served": self.served,
            "frontier": self.head if self.served else None,
            "waiting": waiting,
            "rate_per_second": rate,
            "admission_batch_size": r.batch_size,
            "interval_seconds": r.interval,
            "at": t * 1000,
            "next_tick_at": (t + r.interval) * 1000,
            "relearn_within_seconds": math.ceil(min(r.relearn_max, max(r.interval, spread))),
        }

    # --- a page without a socket ----------------------------------------------------
    def _state_at(self, t: float) -> tuple[dict[str, Any], int]:
        """The line state a read at ``t`` finds, and the line's head then."""
        k = bisect.bisect_right(self.tick_times, t) - 1
        return (self.states[k], self.heads[k]) if k >= 0 else (self.before, 0)

    def _learns_at(self, i: int, admitted: float) -> float:
        """When a page without a socket, admitted at ``admitted``, learns it:
        its reads by the page's rules from its arrival replayed over the
        states the ticks wrote (only the admitted need it: reads change
        nothing else at zero CPU). Its first read at or after the admission
        finds ``frontier >= score``; a number still of the pre-queue's epoch
        is learnt again first: from the draw's document (a pre-queue page
        with a key; its number then meets the state it last read), else by
        asking (that answer carries the token)."""
        rng = random.Random(f"{self.seed}:{i}")
        number = self.number.pop(i)
        read_at = self.people[i].arrive_at
        relearn_at: float | None = None
        drawn = False  # the pending relearn reads the draw's document
        state: dict[str, Any] = self.before
        while read_at <= admitted + self.r.until:
            if relearn_at is not None and relearn_at < read_at and drawn:
                self.floor.draw_reads += 1
                number = self._from_draw(i, number) or number
                if page.place_in(number, state).admitted:
                    return relearn_at  # then asks: the answer is the token
                relearn_at = None
                continue
            if relearn_at is not None and relearn_at < read_at:  # the number again
                self.floor.relearns += 1
                if relearn_at >= admitted:
                    return relearn_at  # the answer carries the token
                state, head = self._state_at(relearn_at)
                number = self._number(i, head, state["served"])
                relearn_at = None
                continue
            state, _ = self._state_at(read_at)
            self.floor.reads += 1
            where = page.place_in(number, state)
            if where.admitted:
                return read_at  # the one authenticated call: its answer is the token
            if where.relearn and relearn_at is None:
                drawn = page.from_draw(number, state)
                delay = page.draw_delay_ms if drawn else page.relearn_delay_ms
                relearn_at = read_at + delay(state, rng.random) / 1000
            ms = page.next_read_ms(
                state, where.place, read_at * 1000, rng.random, self.r.sale_start * 1000
            )
            read_at += ms / 1000 if ms is not None else math.inf
        return math.inf

    def _from_draw(self, i: int, number: dict[str, Any]) -> dict[str, Any] | None:
        """The number the draw's document gives pre-queue person ``i``: its
        rank (those who left before the draw keep theirs), nobody served.
        Scores are ranks in the line, 1-based."""
        doc = {"epoch": 1, "served": 0, "entries": {"e": self.index[i] + 1}}
        return page.number_from_draw(doc, "e", number.get("draw_key"))

    # --- admitted -------------------------------------------------------------------
    def _learn(self, t: float, i: int) -> None:
        if i not in self.admitted_at:
            return  # the time to choose ended first
        self.floor.learnt += 1
        behaviour = self.people[i].behaviour
        del self.admitted_at[i]
        self.free -= 1
        if behaviour in HOLD_UNTIL_TTL:
            sweep = self.r.expiry_interval
            due = t + self.r.claim_ttl - self.r.sale_start
            self.at(self.r.sale_start + math.ceil(due / sweep) * sweep, "release", i)
        else:
            self.sold += 1
            self.floor.sold.append((t - self.r.sale_start, self.sold))

    def _release(self, t: float, i: int) -> None:
        self.free += 1


# --- beside the floor: what the machine did ---------------------------------------
def busy_share(timeline: list[dict[str, Any]], until: float | None) -> tuple[float, float] | None:
    """The share of all the machine's cores the stack and the load generator
    spent from the first sample to ``until`` (the last sample when None), and
    that span in seconds. Near 1: the sale waited on CPU, so a cheaper request
    is what moves it; well below: it waited on its rules or on latency."""
    points = [p for p in timeline if "cpu" in p and (until is None or p["t"] <= until)]
    if len(points) < 2:
        return None
    span = points[-1]["t"] - points[0]["t"]
    if span <= 0:
        return None
    return (points[-1]["cpu"] - points[0]["cpu"]) / (span * (os.cpu_count() or 1)), span
