"""Simulated customers of a flash sale, over the public HTTP and WebSocket API.

Each customer is one asyncio task: arrive, join the queue, wait for admission
by the waiting-room page's rules (bench/page.py: the public line state read on
the page's timer, the number learnt again after the draw, one authenticated
question for the token, the socket's news when it holds one), claim a ticket
with the admission token, start a payment and pay (or decline) at the sandbox
gateway, then watch the claim until it is confirmed or released.
A share of them misbehave the way real people do: leave the queue, let the
time to choose lapse (a forgotten tab), let the claim expire, abandon or
decline the payment.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from bench import page
from bench._common import Api, Recorder, error_code, jwt_claims, ws_ticket

BEHAVIOURS = ("abandon_queue", "lapse_admission", "expire_claim", "decline", "abandon_payment")


@dataclass
class Customer:
    index: int
    id: str
    token: str
    ws: bool
    behaviour: str = "pay"
    arrive_at: float | None = None  # seconds after the run starts; None: uniform over join_seconds
    leave_after: float = 10.0  # abandon_queue: seconds after joining
    number: dict[str, Any] | None = None  # the page's number (bench/page.py)
    state: dict[str, Any] | None = None  # the last line state it read or heard
    asked_served: int | None = None  # served of the last WAITING answer to "my token?"
    asking: bool = False  # a question over the socket not answered yet
    socket_open: bool = False
    # Authenticated HTTP requests after the draw, before the token (tickets for
    # the socket, the number again, a token question answered WAITING); the
    # question that brought the token; questions over the socket.
    questions: int = 0
    token_questions: int = 0
    socket_questions: int = 0
    from_draw: bool = False  # its number after the draw came from the draw's document
    news: asyncio.Event = field(default_factory=asyncio.Event)  # the socket brought something
    pushed: dict[str, Any] | None = None  # a ``line`` message not yet taken in
    force_read: bool = False  # status news: read the state now
    ws_send: Any = None
    trace: list[tuple] | None = None  # --trace: (wall clock, what, details) of the waiting
    admission_token: str | None = None
    admission_via: str = ""
    push_received_at: float | None = None  # wall clock (time.time()) of the admitted push
    gone: bool = False  # admission expired or sale over: stop waiting
    outcome: str = ""


@dataclass
class SaleConfig:
    event_id: str
    tiers: list[dict[str, Any]]
    http_url: str
    ws_url: str
    sandbox_url: str
    join_seconds: float = 5.0
    quantity: int = 1
    claim_ttl: float = 600.0
    window_seconds: float = 120.0  # the time to choose
    late_pay_delay: float = 0.0  # > 0: this customer pays only after its claim expired
    seed: int = 1
    sale_start_ms: float = 0.0  # wall clock (ms) of the sale's start: the pre-queue's draw
    edge_cache: bool = True  # line-state reads share one origin read a second (nginx, a CDN)


class Sale:
    """Shared state of all simulated customers, and the customer coroutine."""

    def __init__(
        self,
        cfg: SaleConfig,
        api: Api,
        watch: Api,
        buy: Api,
        sandbox: Api,
        ws_session: aiohttp.ClientSession,
        rec: Recorder,
        edge: Api | None = None,
    ) -> None:
        self.cfg = cfg
        # One pool of connections per kind of request, as a real server's
        # bounded accept queue: a poll or a claim waits behind the requests in
        # flight, not behind every join the flood has still to send.
        self.api = api  # joins
        self.watch = watch  # line-state reads, questions, leaving the queue
        self.buy = buy  # claims, payments, and watching them
        self.sandbox = sandbox
        self.ws_session = ws_session
        self.rec = rec
        self.rng = random.Random(cfg.seed)
        self.counts: Counter = Counter()
        self.ws_open = 0
        self.ws_messages: Counter = Counter()
        self.edge: dict[str, tuple[float, Any]] = {}  # url -> (fetched at, monotonic; the body)
        self.edge_read: dict[str, asyncio.Task] = {}
        self.edge_api = edge or watch
        self.state_reads = 0  # the pages' reads of the line state
        self.draw_reads = 0  # the pages' reads of the draw's documents
        self.push_latency_wall: list[tuple[str, float]] = []  # (queue entry id, receipt wall time)
        self.poll_latency_wall: list[
            tuple[str, float]
        ] = []  # (queue entry id, poll answer wall time)
        self.confirm_latency: list[float] = []  # seconds from sandbox pay to claim CONFIRMED
        self.paid_wall: list[tuple[str, float]] = []  # (claim id, wall clock of the pay)
        self.stopping = asyncio.Event()
        # Fault hooks, switched by bench.faults while a scenario runs.
        self.webhook_mode = "normal"  # or "hold": pay without webhook, faults deliver later
        self.held_references: list[str] = []
        self.late_payers_left = 0
        self.late_payments: list[dict[str, Any]] = []

    # --- one customer ------------------------------------------------------------------
    async def customer(self, c: Customer) -> None:
        try:
            delay = c.arrive_at
            if delay is None:
                delay = self.rng.uniform(0, self.cfg.join_seconds)
            await asyncio.sleep(delay)
            await self._run(c)
        except asyncio.CancelledError:
            c.outcome = c.outcome or "still_waiting_at_end"
            raise
        finally:
            c.gone = True
            c.news.set()
            self.counts[f"outcome:{c.outcome or 'unknown'}"] += 1

    async def _run(self, c: Customer) -> None:
        eid = self.cfg.event_id
        status, body = await self.api.call(
            "join", "POST", f"/api/v1/events/{eid}/queue/", token=c.token
        )
        if status == 201 and isinstance(body, dict):
            c.number = page.number_of(body)
        elif error_code(body) != "already_in_queue":  # a retried join whose first try landed
            c.outcome = f"join_failed:{error_code(body) or status}"
            return
        self.counts["joined"] += 1
        ws_task = asyncio.create_task(self._ws_reader(c)) if c.ws else None
        try:
            if c.behaviour == "abandon_queue":
                await self._abandon(c)
                return
            token = await self._wait_admission(c)
            if token is None:
                c.outcome = c.outcome or "never_admitted"
                return
            self.counts[f"admitted_via_{c.admission_via}"] += 1
            if c.behaviour == "lapse_admission":
                c.outcome = "let_admission_lapse"
                return
        finally:
            if ws_task is not None:
                ws_task.cancel()
        claim = await self._claim(c, token)
        if claim is None:
            return
        self.counts["claimed"] += 1
        if c.behaviour == "expire_claim":
            c.outcome = "let_claim_expire"
            return
        await self._pay(c, claim)

    async def _abandon(self, c: Customer) -> None:
        await asyncio.sleep(c.leave_after)
        status, body = await self.watch.call(
            "leave", "DELETE", f"/api/v1/events/{self.cfg.event_id}/queue/", token=c.token
        )
        c.outcome = (
            "abandoned_queue" if status == 204 else f"leave_failed:{error_code(body) or status}"
        )

    # --- waiting room: the page's rules (bench/page.py, docs/API.md) --------------------
    def _after_draw(self) -> bool:
        return time.time() * 1000 >= self.cfg.sale_start_ms

    async def _read_state(self) -> dict[str, Any] | None:
        """The public line state (no sign-in), through the edge cache."""
        self.state_reads += 1
        url = f"/api/v1/events/{self.cfg.event_id}/queue/state/"
        return await self._read_public("line_state", url)

    async def _read_draw(self, shard: str) -> dict[str, Any] | None:
        """One shard of the pre-queue draw's documents (no sign-in), through
        the edge cache as the line state."""
        self.draw_reads += 1
        url = f"/api/v1/events/{self.cfg.event_id}/queue/draw/{shard}/"
        return await self._read_public("draw_shard", url)

    async def _read_public(self, name: str, url: str) -> dict[str, Any] | None:
        """A public document. With ``edge_cache``, as nginx's micro-cache in
        front of the origin serves it (``proxy_cache_lock``,
        ``proxy_cache_use_stale updating``): a copy younger than a second is
        answered as it is; an older one starts one origin read and is
        answered meanwhile; only the very first read waits for the origin.
        The origin reads have connections of their own (``edge``), as nginx's."""
        if not self.cfg.edge_cache:
            return await self._origin_read(self.watch, name, url)
        held = self.edge.get(url)
        if held is not None and time.monotonic() - held[0] < 1.0:
            return held[1]
        reading = self.edge_read.get(url)
        if reading is None or reading.done():
            reading = asyncio.create_task(self._origin_read(self.edge_api, name, url))
            self.edge_read[url] = reading
        if held is not None:
            return held[1]
        return await asyncio.shield(reading)

    async def _origin_read(self, api: Api, name: str, url: str) -> dict[str, Any] | None:
        status, body = await api.call(name, "GET", url)
        if status != 200 or not isinstance(body, dict):
            return None
        if api is self.edge_api:
            self.edge[url] = (time.monotonic(), body)
        return body

    async def _number_from_draw(self, c: Customer) -> bool:
        """The page's number from the draw's document (line.js readDraw);
        False: it has none for this customer, or could not be read."""
        draw_key = (c.number or {}).get("draw_key")
        if not draw_key:
            return False
        shard, entry = page.draw_place(draw_key)
        for attempt in range(page.DRAW_TRIES):
            if attempt:
                await asyncio.sleep(1.0)
            number = page.number_from_draw(await self._read_draw(shard), entry, draw_key)
            if number is not None:
                c.number = number
                c.from_draw = True
                return True
        return False

    async def _ask(self, c: Customer) -> None:
        """One question about this customer: over the socket when it is open
        (the answer is a ``position`` message), else ``GET queue/position/``."""
        if c.socket_open and c.ws_send is not None:
            c.asking = True
            c.socket_questions += 1
            with contextlib.suppress(Exception):
                await c.ws_send({"type": "position"})
            return
        status, body = await self.watch.call(
            "position", "GET", f"/api/v1/events/{self.cfg.event_id}/queue/position/", token=c.token
        )
        if status != 200 or not isinstance(body, dict):
            if self._after_draw():
                c.questions += 1
            return
        if body.get("status") == "ADMITTED" and body.get("admission_token"):
            c.token_questions += 1
        elif self._after_draw():
            c.questions += 1
        self._on_snapshot(c, body, via="poll")

    def _on_snapshot(self, c: Customer, body: dict[str, Any], *, via: str) -> None:
        state = body.get("status")
        if c.trace is not None:
            c.trace.append((time.time(), "snapshot", via, state, page.number_of(body)))
        if state == "WAITING":
            c.number = page.number_of(body)
            if page.place_in(c.number, c.state).admitted:  # a tie went the other way
                c.asked_served = body.get("served")
        elif state == "ADMITTED" and body.get("admission_token"):
            if not c.admission_token:
                c.admission_token, c.admission_via = body["admission_token"], via
                entry = jwt_claims(c.admission_token).get("qe")
                if entry and via == "poll":
                    self.poll_latency_wall.append((entry, time.time()))
        elif state is not None or body.get("code"):
            c.gone = True
            c.outcome = f"left_queue_as_{state or body.get('code')}"
        c.news.set()

    async def _wait_admission(self, c: Customer) -> str | None:
        """Until the token comes (the answer to a question, or the socket's
        push): read the line state on the page's timer (a ``line`` message
        counts as a read), learn the number again after the draw, ask once
        the state's frontier passes the number (with the socket open, only if
        the push has not come 2 s later). Stops when the sale ends."""
        loop = asyncio.get_running_loop()
        next_read = loop.time()  # the page reads the state as it opens
        relearn_at: float | None = None
        ask_at: float | None = None
        while not self.stopping.is_set() and not c.gone:
            if c.admission_token:
                return c.admission_token
            now = loop.time()
            due = min(next_read, relearn_at or math.inf, ask_at or math.inf)
            if due > now:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(c.news.wait(), due - now)
                if not c.news.is_set():
                    continue
                c.news.clear()
                pushed, c.pushed = c.pushed, None
                if c.force_read:
                    c.force_read, next_read = False, loop.time()
                if pushed is None:
                    continue
                state = pushed  # a ``line`` message counts as a read
            elif relearn_at is not None and relearn_at <= now:
                relearn_at = None
                if c.state is None or not (
                    page.from_draw(c.number, c.state) and await self._number_from_draw(c)
                ):
                    await self._ask(c)
                    continue
                state = c.state  # placed again with the drawn number
            elif ask_at is not None and ask_at <= now:
                ask_at = None
                if not c.admission_token:
                    await self._ask(c)
                continue
            else:
                read = await self._read_state()
                if read is None:
                    next_read = loop.time() + page.FAR_MIN_MS / 1000
                    continue
                state = read
            c.state = state
            if c.trace is not None:
                c.trace.append(
                    (
                        time.time(),
                        "state",
                        state.get("epoch"),
                        state.get("served"),
                        state.get("frontier"),
                        state.get("status"),
                        dict(c.number or {}),
                    )
                )
            if state.get("status") == "ENDED":
                c.outcome = "sale_ended"
                return None
            where = page.place_in(c.number, state)
            now = loop.time()
            if where.relearn and relearn_at is None and not c.asking:
                delay = (
                    page.draw_delay_ms if page.from_draw(c.number, state) else page.relearn_delay_ms
                )
                relearn_at = now + delay(state, self.rng.random) / 1000
            elif where.admitted and ask_at is None and page.may_ask_again(c.asked_served, state):
                ask_at = now + (page.PUSH_GRACE_MS / 1000 if c.socket_open else 0.0)
            wait = page.next_read_ms(
                state, where.place, time.time() * 1000, self.rng.random, self.cfg.sale_start_ms
            )
            if wait is None:
                c.outcome = "sale_ended"
                return None
            next_read = now + wait / 1000
        return c.admission_token

    async def _ws_reader(self, c: Customer) -> None:
        """The page's socket: a fresh ticket per connection, reconnects
        backing off 1, 2, 4 ... 30 s, times 0.5 to 1.5, while the customer waits."""
        url = f"{self.cfg.ws_url}/ws/events/{self.cfg.event_id}/queue/"
        origin = self.cfg.http_url
        failures = 0
        while not c.gone and not c.admission_token and not self.stopping.is_set():
            started, t = self.rec.now(), time.monotonic()
            try:
                # A fresh single-use ticket per connection (from the socket's own host).
                if self._after_draw():
                    c.questions += 1
                ticket = await ws_ticket(self.ws_session, url, c.token, origin)
                async with self.ws_session.ws_connect(
                    f"{url}?ticket={ticket}",
                    headers={"Origin": origin},
                    autoping=True,
                    timeout=aiohttp.ClientWSTimeout(ws_close=5),
                ) as ws:
                    self.rec.add("ws_connect", started, time.monotonic() - t, 101, None)
                    self.ws_open += 1
                    c.socket_open, c.ws_send = True, ws.send_json
                    failures = 0
                    try:
                        async for msg in ws:
                            if msg.type == aiohttp.WSMsgType.TEXT:
                                self._on_push(c, msg.data)
                            if c.admission_token or c.gone:
                                return
                    finally:
                        self.ws_open -= 1
                        c.socket_open, c.ws_send, c.asking = False, None, False
                self.counts["ws_closed_by_server"] += 1
            except aiohttp.WSServerHandshakeError as exc:
                self.rec.add("ws_connect", started, time.monotonic() - t, exc.status, "handshake")
            except (aiohttp.ClientError, TimeoutError, OSError):
                self.rec.add("ws_connect", started, time.monotonic() - t, 0, None)
            failures += 1
            await asyncio.sleep(min(30.0, 2.0 ** (failures - 1)) * self.rng.uniform(0.5, 1.5))

    def _on_push(self, c: Customer, raw: str) -> None:
        try:
            message = json.loads(raw)
        except ValueError:
            return
        kind = message.get("type", "?")
        self.ws_messages[kind] += 1
        if kind == "line":
            c.pushed = message
        elif kind == "position":  # on connect, and the answer to a question
            c.asking = False
            self._on_snapshot(c, message, via="ws_snapshot")
            return
        elif kind == "admitted" and message.get("admission_token") and not c.admission_token:
            c.push_received_at = time.time()
            c.admission_token, c.admission_via = message["admission_token"], "push"
            entry = jwt_claims(c.admission_token).get("qe")
            if entry:
                self.push_latency_wall.append((entry, c.push_received_at))
        elif kind == "expired" or kind == "ended":
            c.gone = True
            c.outcome = f"{kind}_{message.get('reason', 'push')}"
        elif kind in ("sold_out", "available", "paused", "resumed"):
            # The page reads the state at once on these (a state read is due).
            c.pushed = None
            c.force_read = True
        c.news.set()

    # --- claim and pay ---------------------------------------------------------------------
    def _tier_order(self) -> list[dict[str, Any]]:
        tiers = list(self.cfg.tiers)
        weights = [t["inventory"] for t in tiers]
        first = self.rng.choices(range(len(tiers)), weights=weights)[0]
        return [tiers[first]] + [t for i, t in enumerate(tiers) if i != first]

    async def _claim(self, c: Customer, token: str) -> dict[str, Any] | None:
        for tier in self._tier_order():
            status, body = await self.buy.call(
                "claim",
                "POST",
                f"/api/v1/events/{self.cfg.event_id}/claims/",
                token=c.token,
                body={
                    "admission_token": token,
                    "tier_id": tier["id"],
                    "quantity": self.cfg.quantity,
                },
                headers={"Idempotency-Key": str(uuid.uuid4())},
            )
            if status == 201 and isinstance(body, dict):
                return body
            if error_code(body) == "sold_out":
                continue
            c.outcome = f"claim_failed:{error_code(body) or status}"
            return None
        c.outcome = "claim_failed:sold_out"
        return None

    async def _create_payment(self, c: Customer, claim_id: str) -> dict[str, Any] | None:
        key = str(uuid.uuid4())
        deadline = time.monotonic() + self.cfg.claim_ttl
        attempt = 0
        while time.monotonic() < deadline and not self.stopping.is_set():
            status, body = await self.buy.call(
                "payment_create",
                "POST",
                f"/api/v1/claims/{claim_id}/payments/",
                token=c.token,
                body={},
                headers={"Idempotency-Key": key},
            )
            if status in (200, 201) and isinstance(body, dict) and body.get("reference"):
                return await self._until_at_gateway(c, body, deadline)
            if status not in (0, 500, 503, 504):
                c.outcome = f"payment_failed:{error_code(body) or status}"
                return None
            attempt += 1
            if attempt % 3 == 0:  # a stored 5xx answer is replayed for the same key
                key = str(uuid.uuid4())
            await asyncio.sleep(min(10.0, 0.5 * 2**attempt) * self.rng.uniform(0.5, 1.0))
        c.outcome = "payment_failed:gave_up"
        return None

    async def _until_at_gateway(
        self, c: Customer, payment: dict[str, Any], deadline: float
    ) -> dict[str, Any] | None:
        """A payment still INITIALIZING has no checkout page yet (the gateway
        call failed; reconciliation retries it): wait for its authorization_url."""
        wait = 1.0
        while not payment.get("authorization_url"):
            if (
                payment.get("status") not in ("INITIALIZING", "PENDING")
                or time.monotonic() > deadline
            ):
                c.outcome = f"payment_never_reached_gateway:{payment.get('status')}"
                return None
            await asyncio.sleep(wait * self.rng.uniform(0.5, 1.0))
            wait = min(wait * 2, 10.0)
            status, body = await self.buy.call(
                "payment_get", "GET", f"/api/v1/payments/{payment['payment_id']}/", token=c.token
            )
            if status == 200 and isinstance(body, dict):
                payment = body
        self.counts["payment_waited_for_gateway"] += wait > 1.0
        return payment

    async def _sandbox_pay(
        self, reference: str, outcome: str, *, send_webhook: bool = True
    ) -> bool:
        for attempt in range(8):
            status, _ = await self.sandbox.call(
                "sandbox_pay",
                "POST",
                f"/_sandbox/pay/{reference}",
                body={"outcome": outcome, "wait": False, "send_webhook": send_webhook},
            )
            if status == 200:
                return True
            # 404: the gateway never recorded the transaction (a 5xx before it
            # did); reconciliation initializes it again with the same reference.
            await asyncio.sleep(min(15.0, 2.0 * 2**attempt) * self.rng.uniform(0.5, 1.0))
        return False

    async def _pay(self, c: Customer, claim: dict[str, Any]) -> None:
        claim_id = claim["claim_id"]
        payment = await self._create_payment(c, claim_id)
        if payment is None:
            return
        self.counts["payment_started"] += 1
        if c.behaviour == "abandon_payment":
            c.outcome = "abandoned_payment"
            return
        reference = payment["reference"]
        outcome = "failed" if c.behaviour == "decline" else "success"
        if outcome == "success" and self.late_payers_left > 0:
            self.late_payers_left -= 1
            await self._pay_late(c, claim_id, reference)
            return
        hold = self.webhook_mode == "hold" and outcome == "success"
        paid_at = time.monotonic()
        if outcome == "success":
            self.paid_wall.append((claim_id, time.time()))
        if not await self._sandbox_pay(reference, outcome, send_webhook=not hold):
            c.outcome = "sandbox_pay_failed"
            return
        if outcome == "failed":
            # A decline sends no webhook (as with Paystack): the browser's
            # return to the callback page is what finds it.
            await self.buy.call("payment_return", "GET", f"/payments/return/?reference={reference}")
        if hold:
            self.held_references.append(reference)
        final = await self._watch_claim(c, claim_id, timeout=self.cfg.claim_ttl + 120)
        if final == "CONFIRMED":
            self.confirm_latency.append(time.monotonic() - paid_at)
        c.outcome = {"CONFIRMED": "bought", "RELEASED": "released"}.get(final, f"claim_{final}")
        if c.behaviour == "decline":
            c.outcome = f"declined_{c.outcome}"

    async def _pay_late(self, c: Customer, claim_id: str, reference: str) -> None:
        """Pay only after the claim has expired: the success reaches a
        released claim (re-instated if tickets are free, else a refund)."""
        final = await self._watch_claim(c, claim_id, timeout=self.cfg.claim_ttl + 180, interval=5.0)
        record = {"claim_id": claim_id, "reference": reference, "before": final}
        paid_at = time.monotonic()
        await self._sandbox_pay(reference, "success")
        record["after"] = await self._watch_claim(
            c, claim_id, timeout=60, interval=2.0, until=("CONFIRMED",)
        )
        record["seconds"] = time.monotonic() - paid_at
        self.late_payments.append(record)
        c.outcome = f"late_payer_{record['after'].lower()}"

    async def _watch_claim(
        self,
        c: Customer,
        claim_id: str,
        *,
        timeout: float,
        interval: float = 2.0,
        until: tuple[str, ...] = ("CONFIRMED", "RELEASED"),
    ) -> str:
        deadline = time.monotonic() + timeout
        state = "UNKNOWN"
        while time.monotonic() < deadline:
            await asyncio.sleep(interval)
            status, body = await self.buy.call(
                "claim_get", "GET", f"/api/v1/claims/{claim_id}/", token=c.token
            )
            if status == 200 and isinstance(body, dict):
                state = body.get("status", state)
                if state in until:
                    return state
            interval = min(interval * 1.5, 15.0)
        return state
