"""Watchers of an event's queue hear when the last ticket goes and when
tickets come back (invariant 4), through the real ASGI app and Redis layer."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator

from claims.domain import ReleaseReason
from claims.services import claim_create, claim_release
from config.asgi import application
from queueing.services import ws_ticket_issue
from tests.support.factories import CustomerFactory
from tests.support.sales import admit, make_event

pytestmark = pytest.mark.django_db(transaction=True)


def test_sold_out_then_available_are_pushed_to_watchers():
    event = make_event(tickets=1)
    buyer, _entry, admission = admit(event)
    watcher = CustomerFactory()
    ticket = ws_ticket_issue(event_id=event.id, customer_id=watcher.id).ticket
    tier = event.tiers.get()

    async def scenario():
        ws = WebsocketCommunicator(application, f"/ws/events/{event.id}/queue/?ticket={ticket}")
        assert (await ws.connect())[0]
        await ws.receive_json_from()  # the position snapshot
        claim = await sync_to_async(claim_create)(
            event_id=event.id,
            customer_id=buyer.id,
            admission_token=admission,
            tier_id=tier.id,
            quantity=1,
        )
        sold_out = await ws.receive_json_from(2)
        await sync_to_async(claim_release)(claim_id=claim.id, reason=ReleaseReason.CUSTOMER)
        available = await ws.receive_json_from(2)
        await ws.disconnect()
        return sold_out, available

    sold_out, available = async_to_sync(scenario)()
    assert sold_out == {"type": "sold_out", "event_id": str(event.id)}
    assert available == {"type": "available", "event_id": str(event.id)}
    event.refresh_from_db()
    assert event.status == "ACTIVE"
