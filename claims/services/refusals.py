"""How a claim is refused once Postgres has had its say: "busy, retry",
"only N left" or "sold out" when tickets were short, "already claimed" or
"admission expired" when the admission was gone. Shared by general
admission and reserved seating."""

from __future__ import annotations

import uuid
from typing import NoReturn

from claims.selectors import already_claimed, customer_holds_purchase
from events.selectors import TierSnapshot
from events.services import event_mark_sold_out
from fairqueue.errors import Busy, Conflict, ErrorCode, Forbidden, Gone
from inventory.selectors import event_has_free_ticket, tier_free_tickets
from queueing.selectors import admission_ended_sold_out
from queueing.services import admissions_sold_out

SOLD_OUT_FIRST_ON_WAITLIST = (
    "Sold out. You are first on the waiting list for a ticket that comes back."
)


def mark_sold_out_if_none_left(event_id: uuid.UUID | str) -> None:
    if not event_has_free_ticket(event_id=event_id):
        event_mark_sold_out(event_id=event_id)


def refuse_short(
    tier: TierSnapshot, quantity: int, *, customer_id: uuid.UUID | str | None = None
) -> NoReturn:
    """Fewer free ticket rows than asked for. Unheld rows that claims in
    flight have locked come back if those roll back: "busy, retry" rather
    than a final answer."""
    free = tier_free_tickets(tier_id=tier.id)
    if free >= quantity:
        raise Busy("Tickets are being claimed right now; retry shortly.")
    refuse_more_than_left(tier, free, customer_id=customer_id)


def refuse_more_than_left(
    tier: TierSnapshot, free: int, *, customer_id: uuid.UUID | str | None = None
) -> NoReturn:
    """Postgres has ``free`` tickets of the tier, fewer than asked for:
    "sold out" only when there are none; otherwise how many there are
    (409 not_enough_tickets, ``details.available``), which the customer may
    still take with the same admission. Sold out and the event has nothing
    left at all: the customer's admission ends and they are first on the
    waiting list (queueing.services.sold_out), and told so."""
    if free > 0:
        raise Conflict(
            f"Only {free} {'ticket is' if free == 1 else 'tickets are'} left in this tier.",
            code=ErrorCode.NOT_ENOUGH_TICKETS,
            details={"available": free},
        )
    mark_sold_out_if_none_left(tier.event_id)
    if customer_id is not None and admissions_sold_out(
        event_id=tier.event_id, customer_id=customer_id
    ):
        raise Gone(SOLD_OUT_FIRST_ON_WAITLIST, code=ErrorCode.SOLD_OUT)
    raise Gone("Sold out.", code=ErrorCode.SOLD_OUT)


def refuse_admission(tier: TierSnapshot, customer_id: uuid.UUID | str) -> NoReturn:
    """Not admitted (any more), or the entry moved under us: used up by this
    customer's own claim, expired, or ended because nothing was left (sold
    out: the customer is first on the waiting list)."""
    if customer_holds_purchase(event_id=tier.event_id, customer_id=customer_id):
        raise already_claimed(event_id=tier.event_id, customer_id=customer_id)
    if admission_ended_sold_out(event_id=tier.event_id, customer_id=customer_id):
        raise Gone(SOLD_OUT_FIRST_ON_WAITLIST, code=ErrorCode.SOLD_OUT)
    raise Forbidden("The admission has expired.", code=ErrorCode.ADMISSION_EXPIRED)
