"""SOLD_OUT and back racing each other. ``event_mark_sold_out``
checks Postgres for a free ticket, then flips the status; a release whose "back
on sale" runs in between must not be lost (the event would stay SOLD_OUT with
a free ticket, and admission would stop)."""

from __future__ import annotations

import pytest

from claims.domain import ReleaseReason
from claims.services import claim_release
from events.models import Event
from events.services import event_mark_sold_out, inventory_reconcile
from events.services import sale_status as sale_status_module
from inventory.models import Ticket
from tests.support.races import Between
from tests.support.sales import hold_tickets, on_sale

pytestmark = pytest.mark.django_db(transaction=True)


def status(event_id) -> str:
    return Event.objects.get(pk=event_id).status


def release(claim):
    return lambda: claim_release(claim_id=claim.pk, reason=ReleaseReason.CUSTOMER)


def test_a_release_between_the_sold_out_check_and_the_flip_keeps_the_event_on_sale(
    monkeypatch,
):
    tier = on_sale(tickets=1)
    claim = hold_tickets(tier, 1)  # every ticket held, the event still ACTIVE
    between = Between(monkeypatch, sale_status_module, "event_has_free_ticket", release(claim))
    event_mark_sold_out(event_id=tier.event_id)
    between.finish()
    assert Ticket.objects.filter(tier=tier, claim__isnull=True).count() == 1
    assert status(tier.event_id) == "ACTIVE"


def test_the_same_race_inside_the_reconcile_keeps_the_event_on_sale(monkeypatch):
    tier = on_sale(tickets=1)
    claim = hold_tickets(tier, 1)
    between = Between(monkeypatch, sale_status_module, "event_has_free_ticket", release(claim))
    report = inventory_reconcile()
    between.finish()
    assert report.failed == []
    assert status(tier.event_id) == "ACTIVE"


def test_with_no_release_the_event_is_marked_sold_out():
    tier = on_sale(tickets=1)
    hold_tickets(tier, 1)
    assert event_mark_sold_out(event_id=tier.event_id) is True
    assert status(tier.event_id) == "SOLD_OUT"
