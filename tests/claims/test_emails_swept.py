"""Emails whose task was lost (the news committed, its enqueue never ran: a
broker outage, a crash) are sent by the sweep, once: the resold note, the
transfer to its recipient and the waiting-list offer, like the
confirmation. Each is marked when sent; the sweep leaves marked ones alone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from claims.models import TicketReturn, TicketTransfer
from claims.services import ticket_return, ticket_transfer_create
from events.models import Event
from queueing.models import QueueEntry, WaitlistEntry, WaitlistState
from queueing.services.waitlist import waitlist_join
from queueing.services.waitlist_offers import waitlist_tick_event
from storefront.tasks import emails_sweep
from tests.claims.resale_support import admitted, resale_event
from tests.support.factories import CustomerFactory
from tests.support.payments import pending_payment, post_webhook
from tests.support.sales import claim_one

pytestmark = pytest.mark.django_db

LATER = timedelta(minutes=5)


def test_a_resold_note_whose_task_was_lost_is_swept_once(
    api, client, gateway, shop, eager_tasks, mailoutbox
):
    tier = resale_event(tickets=1)
    seller_in, buyer = admitted(tier.event, 2)
    seller = shop(tier, seller_in)
    (ticket,) = seller.tickets()
    ticket_return(code=ticket.code, customer_id=seller.customer.pk)
    claim = claim_one(tier, buyer)
    payment = pending_payment(api, claim)
    gateway.pay(payment.reference, send_webhook=False)
    mailoutbox.clear()
    # The webhook confirms and resells; its after-commit news never runs.
    assert post_webhook(client, *gateway.webhook(payment.reference)).status_code == 200
    ret = TicketReturn.objects.get(ticket=ticket, status="RESOLD")
    assert mailoutbox == []

    assert emails_sweep() == 0  # not due yet: its task may still be on its way
    TicketReturn.objects.filter(pk=ret.pk).update(ended_at=timezone.now() - LATER)
    emails_sweep()

    resold = [m for m in mailoutbox if "was resold" in m.subject]
    assert [m.to for m in resold] == [[seller.customer.email]]
    emails_sweep()
    assert len([m for m in mailoutbox if "was resold" in m.subject]) == 1


def test_a_transfer_whose_task_was_lost_is_swept_once(shop, eager_tasks, mailoutbox):
    tier = resale_event(tickets=1)
    (holder_in,) = admitted(tier.event, 1)
    holder = shop(tier, holder_in)
    friend = CustomerFactory()
    mailoutbox.clear()
    transfer = ticket_transfer_create(
        code=holder.tickets()[0].code, customer_id=holder.customer.pk, email=friend.email
    )
    TicketTransfer.objects.filter(pk=transfer.pk).update(created_at=timezone.now() - LATER)

    emails_sweep()
    emails_sweep()

    assert [m.to for m in mailoutbox] == [[friend.email]]
    assert TicketTransfer.objects.get(pk=transfer.pk).emailed_at is not None


def test_an_open_offer_whose_task_was_lost_is_swept_once(shop, eager_tasks, mailoutbox):
    tier = resale_event(tickets=1)
    (seller_in,) = admitted(tier.event, 1)
    seller = shop(tier, seller_in)
    Event.objects.filter(pk=tier.event_id).update(status="SOLD_OUT")
    opened = timezone.now() - LATER
    WaitlistState.objects.create(event_id=tier.event_id, opened_at=opened, drawn_at=opened)
    first, second = CustomerFactory(), CustomerFactory()
    for customer in (first, second):
        waitlist_join(event_id=tier.event_id, customer_id=customer.pk)
    ticket_return(code=seller.tickets()[0].code, customer_id=seller.customer.pk)
    assert waitlist_tick_event(event_id=tier.event_id).offered == [str(first.pk)]
    mailoutbox.clear()
    WaitlistEntry.objects.filter(customer=first).update(offered_at=timezone.now() - LATER)

    emails_sweep()
    emails_sweep()
    assert [m.to for m in mailoutbox] == [[first.email]]

    # An offer whose window passed is not mailed: it goes to the next.
    QueueEntry.objects.filter(customer=first).update(
        admission_expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert waitlist_tick_event(event_id=tier.event_id).offered == [str(second.pk)]
    WaitlistEntry.objects.filter(customer=second).update(offered_at=timezone.now() - LATER)
    QueueEntry.objects.filter(customer=second).update(
        admission_expires_at=timezone.now() - timedelta(seconds=1)
    )
    emails_sweep()
    assert [m.to for m in mailoutbox] == [[first.email]]
