"""An event's history after its sale, written straight into the tables the
organizer's dashboard reads: returns in each state, the refunds resales
brought, waiting-list entries and their offers."""

from __future__ import annotations

from django.utils import timezone

from claims.models import TicketReturn
from claims.services import issued_tickets_issue
from events.models import TicketTier
from inventory.models import Ticket
from payments.models import Refund
from queueing.models import WaitlistEntry
from tests.support.factories import CustomerFactory
from tests.support.sales import hold_tickets, pay


def returned(tier: TicketTier, status: str, *, refund: str = "", fee: int = 0) -> TicketReturn:
    """A paid ticket of ``tier`` returned, in ``status``; ``refund``: the
    status of the resale refund it names (none when empty)."""
    claim = hold_tickets(tier, 1, status="CONFIRMED")
    payment = pay(claim, status="CONFIRMED")
    (ticket,) = issued_tickets_issue(claim_id=claim.pk)
    owed = tier.price - fee
    paid_back = None
    if refund:
        paid_back = Refund.objects.create(
            payment=payment,
            amount=owed,
            currency=claim.currency,
            full=False,
            for_resale=True,
            status=refund,
            requested_by="resale",
            next_check_at=timezone.now(),
        )
    row = Ticket.objects.get(claim=claim)
    if status == "ON_RESALE":  # back on sale, still its buyer's (as ticket_return leaves it)
        Ticket.objects.filter(pk=row.pk).update(claim=None, resale_from=claim)
    return TicketReturn.objects.create(
        ticket=ticket,
        claim=claim,
        event=tier.event,
        ticket_row=row,
        status=status,
        fee=fee,
        refund_amount=owed,
        currency=claim.currency,
        refund_id=paid_back.pk if paid_back else None,
    )


def on_waitlist(event, tier: TicketTier | None, status: str = "waiting", n: int = 1) -> None:
    """``n`` customers on the event's waiting list for ``tier`` (None: any)."""
    start = WaitlistEntry.objects.filter(event=event).count()
    WaitlistEntry.objects.bulk_create(
        WaitlistEntry(
            event=event,
            customer=CustomerFactory(),
            tier=tier,
            status=status,
            score=start + i,
            offer_tier=tier if status != "waiting" else None,
        )
        for i in range(n)
    )
