"""Live seat deltas: seat changes are buffered per tier and pushed batched and
throttled on the event's socket group (at most one message per tier per
interval per process), through the real ASGI app and the Redis channel layer."""

from __future__ import annotations

import itertools
import json
import threading
import time
import uuid

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connection

from config.asgi import application
from inventory.seating import pushes
from inventory.seating.pushes import SeatDeltaBuffer, on_seats_changed, seat_deltas
from queueing.services import ws_ticket_issue
from tests.support.factories import CustomerFactory


class Capture:
    def __init__(self) -> None:
        self.messages: list[tuple[str, dict, float]] = []
        self.lock = threading.Lock()

    def __call__(self, messages: list[tuple[str, dict | str]]) -> None:
        with self.lock:  # seat deltas go out as JSON text, encoded once
            self.messages.extend(
                (g, json.loads(m) if isinstance(m, str) else m, time.monotonic())
                for g, m in messages
            )


def test_changes_of_a_tier_are_merged_into_one_message_with_the_last_status():
    capture = Capture()
    buffer = SeatDeltaBuffer(interval=10, send=capture)
    event, tier = uuid.uuid4(), uuid.uuid4()
    buffer.add(
        event_id=event,
        tier_id=tier,
        changes=[{"label": "A-1", "status": "held"}],
        version=3,
        start=False,
    )
    buffer.add(
        event_id=event,
        tier_id=tier,
        changes=[
            {"label": "A-2", "status": "held"},
            {"label": "A-1", "status": "available"},  # released again: the latest status wins
            {"label": "A-3", "status": "bogus"},  # not a status: dropped
            {"label": 7, "status": "held"},  # not a label: dropped
        ],
        version=5,
        start=False,
    )
    buffer.flush()
    assert [(g, m) for g, m, _ in capture.messages] == [
        (
            f"event.{event}",
            {
                "type": "seats",
                "tier_id": str(tier),
                "version": 5,
                "since": 3,
                "changes": [
                    {"label": "A-2", "status": "held"},
                    {"label": "A-1", "status": "available"},
                ],
            },
        )
    ]
    buffer.flush()  # nothing left
    assert len(capture.messages) == 1


def test_a_burst_is_throttled_per_tier_and_tiers_do_not_wait_for_each_other():
    capture = Capture()
    interval = 0.3
    buffer = SeatDeltaBuffer(interval=interval, send=capture)
    event, tiers = uuid.uuid4(), [uuid.uuid4(), uuid.uuid4()]
    started = time.monotonic()
    n = 0
    while time.monotonic() - started < 1.0:  # a second of changes, ~2,000 per tier
        for tier in tiers:
            buffer.add(
                event_id=event, tier_id=tier, changes=[{"label": f"R-{n}", "status": "held"}]
            )
        n += 1
        time.sleep(0.001)
    elapsed = time.monotonic() - started
    time.sleep(interval * 2 + 0.5)  # the last batch goes out one interval after the burst
    for tier in tiers:
        sent = [(m, at) for _, m, at in capture.messages if m["tier_id"] == str(tier)]
        # Every change arrived exactly once ...
        assert sorted(c["label"] for m, _ in sent for c in m["changes"]) == sorted(
            f"R-{i}" for i in range(n)
        )
        # ... in a handful of messages, not one per seat ...
        assert len(sent) <= elapsed / interval + 2, len(sent)
        # ... spaced by the interval (the first of a quiet tier goes out at once;
        # half of it as the bound: a loaded machine may delay one delivery).
        gaps = [b - a for (_, a), (_, b) in itertools.pairwise(sent)]
        assert all(gap >= interval * 0.5 for gap in gaps), gaps
    assert n > 100


@pytest.mark.django_db(transaction=True)
def test_watchers_of_the_event_receive_batched_deltas_over_the_socket(monkeypatch):
    """Two sockets on the event (the real consumer, the Redis pub/sub layer);
    300 seat changes from 4 threads arrive in a few ``seats`` messages."""
    monkeypatch.setattr(pushes, "INTERVAL_SECONDS", 0.25)
    from tests.support.sales import make_event

    event = make_event(tickets=1)
    tier = event.tiers.get()
    tickets = [
        ws_ticket_issue(event_id=event.id, customer_id=CustomerFactory().id).ticket
        for _ in range(2)
    ]
    labels = [f"{row}-{n}" for row in "ABCDE" for n in range(1, 61)]

    def change_seats(part: list[str]) -> None:
        try:
            for label in part:
                on_seats_changed(
                    None,
                    event_id=event.id,
                    tier_id=tier.id,
                    changes=[{"label": label, "status": "held"}],
                )
                time.sleep(0.002)
        finally:
            connection.close()

    async def scenario():
        sockets = []
        for ticket in tickets:
            ws = WebsocketCommunicator(application, f"/ws/events/{event.id}/queue/?ticket={ticket}")
            assert (await ws.connect())[0]
            await ws.receive_json_from()  # the position snapshot
            sockets.append(ws)
        threads = [threading.Thread(target=change_seats, args=(labels[i::4],)) for i in range(4)]
        started = time.monotonic()
        await sync_to_async(lambda: [t.start() for t in threads] and [t.join() for t in threads])()
        took = time.monotonic() - started
        received = []
        for ws in sockets:
            got, messages = set(), []
            while got != set(labels):
                message = await ws.receive_json_from(10)
                assert message["type"] == "seats", message
                messages.append(message)
                got |= {c["label"] for c in message["changes"]}
            received.append(messages)
            await ws.disconnect()
        return received, took

    received, took = async_to_sync(scenario)()
    for messages in received:
        assert all(m["tier_id"] == str(tier.id) for m in messages)
        assert all(c["status"] == "held" for m in messages for c in m["changes"])
        # One message per 0.25 s while the changes came (~0.2 s unloaded): a
        # few messages, not 300.
        assert len(messages) <= took / 0.25 + 2, (took, [len(m["changes"]) for m in messages])
        assert len(messages) < len(labels) / 10
    assert received[0] == received[1]  # every watcher hears the same batches
    assert seat_deltas.messages_sent >= len(received[0])
