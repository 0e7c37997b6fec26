"""The channel layer's push fan-out (fairqueue/channel_layer.py), on the real
Redis pub/sub layer: pushes reach the registered sockets in the order they
were sent, each customer's only on its own channel, and everything else
still takes channels_redis' own path."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer

from fairqueue.broadcast import PUSH_TYPE, customer_group, event_group
from fairqueue.channel_layer import PushFanoutChannelLayer
from queueing.pushes import send_many
from tests.queueing.test_consumer import communicator, ticket_of
from tests.support.sales import join, make_event

CUSTOMERS = 40


def run(coro_fn):
    return async_to_sync(coro_fn)()


async def _until(predicate, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "pushes did not arrive"
        await asyncio.sleep(0.02)


def test_the_project_layer_is_the_fan_out_layer():
    assert isinstance(get_channel_layer(), PushFanoutChannelLayer)


def test_a_tick_reaches_each_socket_in_order_and_only_its_own_push():
    """The tick's shape: one ``admitted`` push per customer group, then one
    ``position`` broadcast to the event group; sent in one pipeline. Every
    admitted push is handed out before the broadcast, in the order sent."""
    event_id = uuid.uuid4()
    customers = [uuid.uuid4() for _ in range(CUSTOMERS)]
    got: list[tuple[str, dict]] = []

    async def scenario():
        layer = get_channel_layer()
        channel_of = {}
        for customer in customers:
            channel = await layer.new_channel()
            channel_of[customer] = channel
            await layer.group_add(event_group(event_id), channel)
            await layer.group_add(customer_group(event_id, customer), channel)

            async def handler(message, channel=channel):
                got.append((channel, json.loads(message["text"])))

            layer.push_handler_add(channel, handler)
        messages = [
            (customer_group(event_id, c), {"type": "admitted", "admission_token": str(c)})
            for c in customers
        ]
        messages.append((event_group(event_id), {"type": "position", "served": CUSTOMERS}))
        await sync_to_async(send_many)(messages)
        await _until(lambda: len(got) == 2 * CUSTOMERS)
        await asyncio.sleep(0.2)  # nothing more comes
        return channel_of

    channel_of = run(scenario)
    assert len(got) == 2 * CUSTOMERS
    admitted, broadcast = got[:CUSTOMERS], got[CUSTOMERS:]
    # In the order sent, each token on its own customer's channel only.
    assert admitted == [
        (channel_of[c], {"type": "admitted", "admission_token": str(c)}) for c in customers
    ]
    assert sorted(channel for channel, _ in broadcast) == sorted(channel_of.values())
    assert {json.dumps(m) for _, m in broadcast} == {
        json.dumps({"type": "position", "served": CUSTOMERS})
    }


def test_channels_without_a_handler_and_other_messages_take_the_stock_path():
    event_id = uuid.uuid4()
    group = event_group(event_id)
    handled: list[dict] = []

    async def scenario():
        layer = get_channel_layer()
        with_handler, without = await layer.new_channel(), await layer.new_channel()
        for channel in (with_handler, without):
            await layer.group_add(group, channel)

        async def handler(message):
            handled.append(message)

        layer.push_handler_add(with_handler, handler)
        push = {"type": PUSH_TYPE, "text": '{"type": "position"}'}
        other = {"type": "something.else", "n": 1}
        await layer.group_send(group, push)
        await layer.group_send(group, other)
        queued = [
            await asyncio.wait_for(layer.receive(without), 5),
            await asyncio.wait_for(layer.receive(without), 5),
        ]
        not_a_push = await asyncio.wait_for(layer.receive(with_handler), 5)
        await _until(lambda: len(handled) == 1)
        return push, other, queued, not_a_push

    push, other, queued, not_a_push = run(scenario)
    assert queued == [push, other]  # the stock path, in order
    assert handled == [push]
    assert not_a_push == other


def test_a_channel_gone_from_the_layer_gets_nothing_and_a_failing_socket_stops_no_one():
    event_id = uuid.uuid4()
    group = event_group(event_id)
    handled: list[str] = []

    async def scenario():
        layer = get_channel_layer()
        gone, failing, fine = [await layer.new_channel() for _ in range(3)]
        for channel in (gone, failing, fine):
            await layer.group_add(group, channel)

        def recorder(name):
            async def handler(message):
                handled.append(name)
                if name == "failing":
                    raise RuntimeError("socket broke")

            return handler

        for name, channel in (("gone", gone), ("failing", failing), ("fine", fine)):
            layer.push_handler_add(channel, recorder(name))
        # A consumer that ends: its receive is cancelled, the layer forgets
        # the channel (channels_redis' own clean-up).
        receiving = asyncio.ensure_future(layer.receive(gone))
        await asyncio.sleep(0.05)
        receiving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await receiving
        await layer.group_send(group, {"type": PUSH_TYPE, "text": "{}"})
        await _until(lambda: len(handled) == 2)
        await asyncio.sleep(0.2)
        return gone in layer._get_layer().push_handlers

    still_registered = run(scenario)
    assert sorted(handled) == ["failing", "fine"]
    assert not still_registered


@pytest.mark.django_db(transaction=True)
def test_the_consumer_registers_after_its_snapshot_and_leaves_on_disconnect():
    event = make_event(tickets=1)
    customer, _ = join(event)
    ticket = ticket_of(event.id, customer)

    async def scenario():
        layer = get_channel_layer()._get_layer()
        ws = communicator(event.id, ticket)
        assert (await ws.connect())[0]
        snapshot = await ws.receive_json_from()
        await _until(lambda: len(layer.push_handlers) == 1)
        await ws.disconnect()
        return snapshot, dict(layer.push_handlers)

    snapshot, after = run(scenario)
    assert snapshot["status"] == "WAITING"
    assert after == {}
