"""The WebSocket benchmark's clients: processes of their own (no Django here)
that open the sockets and stamp every message on arrival, and the
orchestrator's side of the pipe that drives them tick by tick.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import random
import resource
import signal
import time
from collections import Counter
from typing import Any

import aiohttp

from bench._common import jwt_claims, ws_ticket

LAG_SAMPLE = 50_000  # seat-message lags kept per client process


def raise_nofile() -> int:
    """Soft RLIMIT_NOFILE up to the hard limit (children inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    return soft


# --- the clients (a process of their own; no Django here) ---------------------------------


class Socket:
    __slots__ = ("admitted_at", "closed_at", "customer", "first_at", "handshake", "started")
    __slots__ += ("seat_changes", "seat_messages", "served_at", "token", "ws")

    def __init__(self, customer: str, token: str) -> None:
        self.customer, self.token = customer, token
        self.ws: Any = None
        self.started = self.handshake = self.first_at = 0.0
        self.admitted_at: float | None = None
        self.closed_at: float | None = None
        self.served_at: dict[int, float] = {}
        self.seat_messages = self.seat_changes = 0


class Clients:
    """Opens the sockets, stamps every message on arrival, answers the
    orchestrator's commands over a pipe."""

    def __init__(self, conn: Any, url: str, customers: list[tuple[str, str]], concurrency: int):
        self.conn, self.url, self.concurrency = conn, url, concurrency
        self.sockets = [Socket(c, t) for c, t in customers]
        self.counts: Counter = Counter()
        self.served_count: Counter = Counter()  # served value -> line messages received
        self.frames = 0  # every message after the snapshot
        self.admitted_total = self.first_total = self.opened = 0
        self.closing = False
        self.seat_lag: list[float] = []  # per ``seats`` message: its oldest change's age
        self.seat_lag_seen = 0

    async def run(self) -> None:
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as session:
            self.session = session
            sem = asyncio.Semaphore(self.concurrency)
            await asyncio.gather(*(self._open(s, sem) for s in self.sockets))
            self.opened = sum(1 for s in self.sockets if s.ws is not None)
            deadline = time.monotonic() + 120
            while self.first_total < self.opened and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            self.conn.send(("connected", self._connect_summary()))
            while True:
                command, *args = await asyncio.to_thread(self.conn.recv)
                if command == "tick":
                    self.conn.send(("tick", await self._await_tick(*args)))
                elif command == "seats":
                    self.conn.send(("seats", await self._await_seats(*args)))
                elif command == "finish":
                    self.conn.send(("records", self._records()))
                    self.closing = True
                    await asyncio.gather(
                        *(s.ws.close() for s in self.sockets if s.ws is not None),
                        return_exceptions=True,
                    )
                    return

    async def _open(self, s: Socket, sem: asyncio.Semaphore) -> None:
        async with sem:
            for attempt in range(4):
                s.started = time.monotonic()
                try:
                    ticket = await ws_ticket(self.session, self.url, s.token)
                    s.ws = await self.session.ws_connect(
                        f"{self.url}?ticket={ticket}", autoping=True, max_msg_size=0
                    )
                    s.handshake = time.monotonic() - s.started
                    break
                except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                    self.counts[f"connect_error:{type(exc).__name__}"] += 1
                    await asyncio.sleep(0.2 * 2**attempt)
        if s.ws is not None:
            asyncio.create_task(self._read(s))  # noqa: RUF006 - lives as long as the socket

    async def _read(self, s: Socket) -> None:
        async for msg in s.ws:
            if msg.type == aiohttp.WSMsgType.TEXT:
                self._on_message(s, msg.data, time.monotonic())
        s.closed_at = time.monotonic()
        if not self.closing:
            self.counts[f"error:closed_by_server:{s.ws.close_code}"] += 1

    def _on_message(self, s: Socket, raw: str, now: float) -> None:
        message = json.loads(raw)
        kind = message.get("type")
        if not s.first_at:
            s.first_at = now
            self.first_total += 1
            if (kind, message.get("status")) != ("position", "WAITING"):
                self.counts[f"error:bad_snapshot:{kind}:{message.get('status')}"] += 1
            return
        self.frames += 1
        if kind == "admitted":
            if s.admitted_at is not None:
                self.counts["error:admitted_twice"] += 1
                return
            if jwt_claims(message.get("admission_token", "")).get("sub") != s.customer:
                self.counts["error:admitted_with_someone_elses_token"] += 1
                return
            s.admitted_at = now
            self.admitted_total += 1
        elif kind == "seats":  # bench/seat_push_bench.py: labels are "S<n>@<monotonic>"
            changes = message.get("changes") or []
            s.seat_messages += 1
            s.seat_changes += len(changes)
            if changes:  # the first is the oldest; a uniform sample (reservoir) of the lags
                lag = now - float(changes[0]["label"].rpartition("@")[2])
                self.seat_lag_seen += 1
                if len(self.seat_lag) < LAG_SAMPLE:
                    self.seat_lag.append(lag)
                elif (k := random.randrange(self.seat_lag_seen)) < LAG_SAMPLE:
                    self.seat_lag[k] = lag
        elif kind == "line":  # the line state: near the head every tick, now and then further back
            served = message.get("served")
            if served in s.served_at:
                self.counts["error:line_twice"] += 1
                return
            s.served_at[served] = now
            self.served_count[served] += 1
        else:
            self.counts[f"other:{kind}"] += 1

    def _connect_summary(self) -> dict[str, Any]:
        opened = [s for s in self.sockets if s.ws is not None]
        return {
            "opened": len(opened),
            "first": self.first_total,
            "handshake": [s.handshake for s in opened],
            "first_message": [s.first_at - s.started for s in opened if s.first_at],
            "counts": dict(self.counts),
        }

    async def _await_tick(
        self, served: int, admitted_expected: int, near: int, deadline: float
    ) -> dict:
        """Until ``near`` sockets (the next batch) have the line state of
        ``served`` and the admitted pushes add up to ``admitted_expected``,
        or the deadline; then a short quiet, so the tick's far frames are in."""
        while time.monotonic() < deadline:
            if self.served_count[served] >= near and self.admitted_total >= admitted_expected:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        return {
            "broadcasts": self.served_count[served],
            "admitted": self.admitted_total,
            "frames": self.frames,
        }

    async def _await_seats(self, changes: int, deadline: float) -> dict:
        """Until every open socket has heard ``changes`` seat changes, or the deadline."""
        opened = [s for s in self.sockets if s.ws is not None]
        while time.monotonic() < deadline:
            if all(s.seat_changes >= changes for s in opened):
                break
            await asyncio.sleep(0.05)
        return {
            "sockets": len(opened),
            "complete": sum(1 for s in opened if s.seat_changes >= changes),
            "messages": sum(s.seat_messages for s in opened),
            "changes": sum(s.seat_changes for s in opened),
            "lag": self.seat_lag,
        }

    def _records(self) -> dict[str, Any]:
        return {
            "sockets": {
                s.customer: (s.ws is not None, s.admitted_at, s.served_at, s.closed_at)
                for s in self.sockets
            },
            "counts": dict(self.counts),
            "cpu_seconds": time.process_time(),
        }


def client_process(conn: Any, url: str, customers: list[tuple[str, str]], concurrency: int) -> None:
    raise_nofile()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the orchestrator stops us
    clients = Clients(conn, url, customers, concurrency)
    try:
        import uvloop
    except ImportError:
        asyncio.run(clients.run())
    else:
        uvloop.run(clients.run())


# --- the orchestrator's end of the pipes --------------------------------------------------


class Orchestrator:
    def __init__(self, args: argparse.Namespace, url: str, customers: list[tuple[str, str]]):
        self.args = args
        ctx = mp.get_context("spawn")
        self.pipes, self.procs = [], []
        self.part: dict[str, int] = {}  # customer -> client process
        for i in range(args.client_procs):
            share = customers[i :: args.client_procs]
            self.part.update((c, i) for c, _ in share)
            here, there = ctx.Pipe()
            proc = ctx.Process(
                target=client_process,
                args=(there, url, share, max(1, args.connect_concurrency // args.client_procs)),
                daemon=True,
            )
            proc.start()
            self.pipes.append(here)
            self.procs.append(proc)

    def ask(self, messages: list[tuple] | tuple) -> list[Any]:
        for i, pipe in enumerate(self.pipes):
            pipe.send(messages[i] if isinstance(messages, list) else messages)
        return [pipe.recv()[1] for pipe in self.pipes]

    def connected(self) -> list[dict]:
        return [pipe.recv()[1] for pipe in self.pipes]

    def stop(self) -> None:
        for proc in self.procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
