"""Sockets carry news, not the clock: the frames a tick costs, summed over
the sockets, stay within 2 x admitted + sockets / 6 (queueing/line_sockets.py)."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import Counter
from unittest import mock

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator

from config.asgi import application
from queueing import pushes as queue_pushes
from queueing import services
from queueing.consumers import QueueConsumer
from queueing.line_sockets import FAR_SHARE, UNPLACED, LineSockets
from queueing.models import QueueEntry
from queueing.selectors import waiting_rank
from queueing.store import queue_store
from tests.support.sales import join, make_event


class Socket:
    def __init__(self, customer_id: str) -> None:
        self.customer_id = customer_id
        self.frames: list[str] = []

    async def send_text(self, text: str) -> None:
        self.frames.append(text)


class Layer:
    """The registry's layer, for the tests that hand it messages themselves."""

    async def new_channel(self) -> str:
        return "line!1"

    async def group_add(self, group: str, channel: str) -> None:
        return None

    async def group_discard(self, group: str, channel: str) -> None:
        return None

    async def receive(self, channel: str) -> dict:
        await asyncio.Event().wait()
        raise AssertionError("never")


def tick_message(*, served: int, admitted: list[str], epoch: int = 0, state: str = "") -> dict:
    return {
        "type": "queue.line",
        "state": state or json.dumps({"type": "line", "served": served}),
        "served": served,
        "admitted": len(admitted),
        "epoch": epoch,
        "news": [[c, json.dumps({"type": "admitted", "c": c})] for c in admitted],
    }


def line_of(count: int, *, epoch: int = 0) -> tuple[LineSockets, list[Socket]]:
    """``count`` sockets at places 1..count (served 0), one per customer."""

    async def build():
        registry = LineSockets("e", Layer())
        sockets = [Socket(f"c{i:05d}") for i in range(1, count + 1)]
        for place, socket in enumerate(sockets, start=1):
            await registry.add(socket)
            registry.place(socket, waiting=True, number=place, epoch=epoch)
        return registry, sockets

    return async_to_sync(build)()


def test_a_tick_costs_at_most_twice_its_admissions_plus_a_sixth_of_the_sockets():
    registry, sockets = line_of(600)
    batch, served = 20, 0
    heard_at: dict[str, list[int]] = {s.customer_id: [] for s in sockets}
    for tick in range(1, 25):
        held = len(registry.seq_of)
        before = {s.customer_id: len(s.frames) for s in sockets}
        admitted = [s.customer_id for s in sockets[served : served + batch]]
        served += batch
        frames = async_to_sync(registry.receive)(tick_message(served=served, admitted=admitted))
        assert frames == sum(len(s.frames) - before[s.customer_id] for s in sockets)
        assert frames <= 2 * len(admitted) + held / FAR_SHARE, (tick, frames, held)
        for place, socket in enumerate(sockets[served:], start=1):
            got = socket.frames[before[socket.customer_id] :]
            if got:
                heard_at[socket.customer_id].append(tick)
            if place <= batch:  # the next batch hears every tick, once
                assert len(got) == 1, (tick, place)
        for socket in sockets[served - batch : served]:
            got = socket.frames[before[socket.customer_id] :]
            assert [json.loads(t)["type"] for t in got] == ["admitted"]
        # Sockets let go of: the admitted ones leave the line order.
        assert all(key[0] > served for key in registry.order)
    # Everyone still waiting hears the line now and then: the gaps between
    # two frames (from the first tick on) are at most about FAR_SHARE ticks.
    for socket in sockets[served:]:
        ticks = [0, *heard_at[socket.customer_id], 24]
        assert max(b - a for a, b in itertools.pairwise(ticks)) <= FAR_SHARE + 1


def test_a_tick_that_admits_nobody_sends_nothing_but_news():
    registry, sockets = line_of(60)
    message = tick_message(served=0, admitted=[])
    assert async_to_sync(registry.receive)(message) == 0
    expired = {**message, "news": [["c00001", '{"type":"expired"}']]}
    assert async_to_sync(registry.receive)(expired) == 1
    assert sockets[0].frames == ['{"type":"expired"}']
    assert sum(len(s.frames) for s in sockets) == 1


def test_a_customer_with_two_tabs_is_told_the_line_once_in_the_near_window():
    async def scenario():
        registry = LineSockets("e", Layer())
        first, second, other = Socket("c1"), Socket("c1"), Socket("c2")
        for socket, number in ((first, 2), (second, 2), (other, 3)):
            await registry.add(socket)
            registry.place(socket, waiting=True, number=number, epoch=0)
        await registry.receive(tick_message(served=1, admitted=["c0"]))
        return first, second, other

    first, second, other = async_to_sync(scenario)()
    assert len(first.frames) + len(second.frames) == 1
    assert other.frames == []  # place 2 after a tick of 1: not next, and 3 // 6 = 0 far


def test_the_draw_tells_each_socket_of_the_old_epoch_once_until_it_learns_again():
    registry, sockets = line_of(30, epoch=0)
    async_to_sync(registry.receive)(tick_message(served=0, admitted=[], epoch=0))
    assert all(s.frames == [] for s in sockets)
    state = json.dumps({"type": "line", "epoch": 1})
    frames = async_to_sync(registry.receive)(
        tick_message(served=0, admitted=[], epoch=1, state=state)
    )
    assert frames == 30
    assert all(s.frames == [state] for s in sockets)
    assert all(key[0] == UNPLACED for key in registry.order)
    # One page learns its new number: placed again, it hears the next tick.
    registry.place(sockets[7], waiting=True, number=1, epoch=1)
    async_to_sync(registry.receive)(tick_message(served=0, admitted=[], epoch=1))
    assert sum(len(s.frames) for s in sockets) == 30
    # A snapshot of the old epoch arriving late is unplaced at once.
    registry.place(sockets[8], waiting=True, number=2, epoch=0)
    assert registry.entries[registry.seq_of[sockets[8]]].key[0] == UNPLACED


def drawn_line(event_id: str, order: list[Socket], *, served: int = 0) -> None:
    """The waiting set after the draw: ``order`` at ranks 0, 1, ... (the
    whole line: its marker set), and the served counter."""
    store = queue_store()
    store.r.zadd(store.waiting_key(event_id), {s.customer_id: i for i, s in enumerate(order)})
    store.line_mark(event_id=event_id)
    store.r.set(store.served_key(event_id), served)


def test_the_draw_places_the_sockets_at_their_drawn_numbers():
    registry, sockets = line_of(30, epoch=0)  # event "e", numbered by the pre-queue
    drawn = sockets[::-1]  # the draw reverses the line; one left meanwhile
    left = drawn.pop(3)
    drawn_line("e", drawn)
    state = json.dumps({"type": "line", "epoch": 1})
    frames = async_to_sync(registry.receive)(
        tick_message(served=0, admitted=[], epoch=1, state=state)
    )
    assert frames == 30 and all(s.frames == [state] for s in sockets)
    place_of = {registry.entries[registry.seq_of[s]].key[0]: s for s in sockets}
    assert place_of.pop(UNPLACED) is left
    assert place_of == dict(enumerate(drawn, start=1))
    # The first admitting tick: the next batch (drawn places 1..5 after it)
    # hears the line; the ones further back only in the far turn.
    admitted = [s.customer_id for s in drawn[:5]]
    before = {s.customer_id: len(s.frames) for s in sockets}
    async_to_sync(registry.receive)(tick_message(served=5, admitted=admitted, epoch=1))
    heard = {s.customer_id for s in sockets if len(s.frames) - before[s.customer_id] == 1}
    near = {s.customer_id for s in drawn[5:10]}
    assert near <= heard - set(admitted)
    assert len(heard - near - set(admitted)) <= len(sockets) // FAR_SHARE
    assert left.customer_id not in heard  # unplaced: after every placed one


@pytest.mark.usefixtures("dead_redis")
def test_the_draw_without_redis_leaves_the_sockets_unplaced():
    registry, sockets = line_of(12, epoch=0)
    state = json.dumps({"type": "line", "epoch": 1})
    frames = async_to_sync(registry.receive)(
        tick_message(served=0, admitted=[], epoch=1, state=state)
    )
    assert frames == 12 and all(s.frames == [state] for s in sockets)
    assert all(key[0] == UNPLACED for key in registry.order)
    assert registry.epoch == 1


# --- through the real consumer, the real ticks and the Redis channel layer ----------------


@pytest.mark.django_db(transaction=True)
def test_real_sockets_and_ticks_keep_the_bound_and_never_show_a_better_place():
    count, batch = 48, 4
    event = make_event(tickets=count, admission_batch_size=batch)
    customers = [join(event)[0] for _ in range(count)]
    tickets = [
        services.ws_ticket_issue(event_id=event.id, customer_id=c.id).ticket for c in customers
    ]
    leaving = [customers[12], customers[13], customers[30]]
    dispatched: Counter = Counter()
    original = QueueConsumer.dispatch

    async def counting_dispatch(self, message):
        dispatched[message.get("type")] += 1
        await original(self, message)

    def truth() -> dict:
        """Each customer's status, score and exact place right now."""
        return {
            e.customer_id: (e.status, e.score, waiting_rank(entry=e) + 1)
            for e in QueueEntry.objects.filter(event=event)
        }

    async def scenario():
        sockets = []
        for ticket in tickets:
            path = f"/ws/events/{event.id}/queue/?ticket={ticket}"
            ws = WebsocketCommunicator(application, path)
            assert (await ws.connect())[0]
            sockets.append(ws)
        snapshots = [await ws.receive_json_from(2) for ws in sockets]
        per_tick = []
        dispatched.clear()
        for k in range(6):
            if k == 2:  # three leave from the middle of the line: the truth gets better
                for customer in leaving:
                    await sync_to_async(services.queue_abandon)(
                        event_id=event.id, customer_id=customer.id
                    )
            held = sum(1 for s in snapshots if s is not None)
            report = await sync_to_async(services.admission_tick_event)(event_id=event.id)
            await asyncio.sleep(0.3)
            frames = []
            for i, ws in enumerate(sockets):
                while not await ws.receive_nothing(0.01):
                    frames.append((i, await ws.receive_json_from()))
            per_tick.append((report.admitted, held, frames, await sync_to_async(truth)()))
        woken = Counter(dispatched)
        for ws in sockets:
            await ws.disconnect()
        return snapshots, per_tick, woken

    with mock.patch.object(QueueConsumer, "dispatch", counting_dispatch):
        snapshots, per_tick, woken = async_to_sync(scenario)()

    assert woken == Counter()  # no tick woke a consumer up: the registry sent it all
    admitted_customers = set()
    for admitted, held, frames, now in per_tick:
        assert admitted == batch
        assert 0 < len(frames) <= 2 * admitted + held / FAR_SHARE, (admitted, held, len(frames))
        kinds = Counter(message["type"] for _, message in frames)
        assert kinds["admitted"] == batch
        assert kinds["line"] >= batch  # the next batch hears every tick
        for i, message in frames:
            customer = customers[i]
            if customer in leaving:
                continue
            if message["type"] == "admitted":
                admitted_customers.add(customer.id)
                continue
            status, score, true_place = now[customer.id]
            # The page's rule: a frontier below its score means still waiting,
            # and its place is never better than the truth.
            assert message["frontier"] < snapshots[i]["score"] == score
            place = snapshots[i]["position"] - (message["served"] - snapshots[i]["served"])
            assert status == "WAITING"
            assert place >= true_place >= 1
    assert len(admitted_customers) == 6 * batch
    # After the three left, pages behind them count a place worse than the
    # truth, never better (checked per frame above); the line still served them.
    assert not {c.id for c in leaving} & admitted_customers


def test_news_outside_a_tick_takes_a_socket_out_of_the_line_order():
    """An admission told outside a tick (Redis had missed it, or the window
    was given back) comes on the customer's own group: the socket leaves
    the registry's line order, so the line state stops coming to it."""
    sent = []

    async def scenario():
        registry = LineSockets("e", Layer())
        consumer = QueueConsumer()
        consumer.customer_id, consumer.line = "c1", registry

        async def base_send(message):
            sent.append(message)

        consumer.base_send = base_send
        await registry.add(consumer)
        registry.place(consumer, waiting=True, number=3, epoch=0)
        placed = list(registry.order)
        push = queue_pushes._envelope({"type": "admitted", "admission_token": "t"})
        await consumer.dispatch(push)
        await consumer.dispatch(queue_pushes._envelope({"type": "paused"}))
        return placed, list(registry.order)

    placed, after = async_to_sync(scenario)()
    assert len(placed) == 1 and after == []
    assert [json.loads(m["text"])["type"] for m in sent] == ["admitted", "paused"]
