"""Tickets that changed hands, from Postgres (invariant 8): one live holder
per ticket, the seat carried to the new holder, a return's refund only
after its resale was paid, paid or flagged for staff, and no void or
on-resale code ever let in."""

from __future__ import annotations

from claims.domain import ClaimStatus, IssuedTicketStatus, ReturnStatus, TransferStatus
from claims.models import Claim, IssuedTicket, TicketEvent, TicketReturn, TicketTransfer
from console.invariants.base import Found, Options, When, check, plural, value
from events.models import Event
from payments.attention import attention_filters, resale_refunds_failed
from payments.domain import PaymentStatus, RefundStatus
from payments.models import Payment, Refund

ISSUED = IssuedTicket._meta.db_table
RETURN = TicketReturn._meta.db_table
TRANSFER = TicketTransfer._meta.db_table
CLAIM = Claim._meta.db_table
REFUND = Refund._meta.db_table
TICKET_LOG = TicketEvent._meta.db_table
VOID = IssuedTicketStatus.VOID.value


@check(invariant=8)
def one_live_holder(event: Event, options: Options) -> Found:
    """A ticket that replaced another (resold, transferred) is live only if
    the one it replaced is void; a seat has at most one live ticket; no
    CONFIRMED purchase has more live tickets than ``quantity - moved``."""
    both_live = value(
        f"SELECT COUNT(*) FROM {ISSUED} n JOIN {ISSUED} o ON o.id = n.replaces_id "  # noqa: S608
        "WHERE n.event_id = %s AND n.status <> %s AND o.status <> %s",
        [event.pk, VOID, VOID],
    )
    seat_twice = value(
        f"SELECT COUNT(*) FROM (SELECT tier_id, seat_label FROM {ISSUED} "  # noqa: S608
        "WHERE event_id = %s AND status <> %s AND seat_label <> '' "
        "GROUP BY 1, 2 HAVING COUNT(*) > 1) x",
        [event.pk, VOID],
    )
    miscounted = value(
        f"SELECT COUNT(*) FROM {CLAIM} c WHERE c.event_id = %s AND c.status = %s "  # noqa: S608
        f"AND c.quantity - c.moved < (SELECT COUNT(*) FROM {ISSUED} i "
        "WHERE i.claim_id = c.id AND i.status <> %s)",
        [event.pk, ClaimStatus.CONFIRMED.value, VOID],
    )
    problems = []
    if both_live:
        problems.append(f"{plural(both_live, 'ticket')} live beside the ticket it replaced")
    if seat_twice:
        problems.append(f"{plural(seat_twice, 'seat')} with two live tickets")
    if miscounted:
        problems.append(
            f"{plural(miscounted, 'confirmed purchase')} with more live tickets than it holds"
        )
    moved = value(
        f"SELECT COUNT(*) FROM {ISSUED} WHERE event_id = %s AND replaces_id IS NOT NULL",  # noqa: S608
        [event.pk],
    )
    return Found(problems, f"{plural(moved, 'ticket')} changed hands, one live holder each")


@check(invariant=8)
def seats_carried(event: Event, options: Options) -> Found:
    """A resold or transferred ticket's new ticket is for the same tier and seat."""
    moved_seat = value(
        f"SELECT COUNT(*) FROM {ISSUED} n JOIN {ISSUED} o ON o.id = n.replaces_id "  # noqa: S608
        "WHERE n.event_id = %s AND (n.seat_label <> o.seat_label OR n.tier_id <> o.tier_id)",
        [event.pk],
    )
    problems = [f"{plural(moved_seat, 'ticket')} not on the seat it replaced"] if moved_seat else []
    return Found(problems, "every new holder has the seat of the ticket replaced")


@check(invariant=8)
def refund_after_resale(event: Event, options: Options) -> Found:
    """A return's refund exists only once its resale was paid (RESOLD, the
    buyer's claim confirmed), and every resale refund belongs to one (its
    ticket's log names it: a refund that failed and was asked for again
    stays that return's)."""
    early = value(
        f"SELECT COUNT(*) FROM {RETURN} r LEFT JOIN {CLAIM} b ON b.id = r.resale_claim_id "  # noqa: S608
        "WHERE r.event_id = %s AND r.refund_id IS NOT NULL "
        "AND (r.status <> %s OR b.confirmed_at IS NULL)",
        [event.pk, ReturnStatus.RESOLD.value],
    )
    orphan = value(
        f"SELECT COUNT(*) FROM {REFUND} f JOIN payments_payment p ON p.id = f.payment_id "  # noqa: S608
        f"JOIN {CLAIM} c ON c.id = p.claim_id WHERE c.event_id = %s AND f.for_resale "
        f"AND NOT EXISTS (SELECT 1 FROM {RETURN} r "
        f"JOIN {TICKET_LOG} e ON e.ticket_id = r.ticket_id "
        "WHERE r.claim_id = c.id AND r.status = %s AND e.kind = 'refund_requested' "
        "AND e.data->>'refund_id' = f.id::text)",
        [event.pk, ReturnStatus.RESOLD.value],
    )
    problems = []
    if early:
        problems.append(f"{plural(early, 'return')} refunded without a paid resale")
    if orphan:
        problems.append(f"{plural(orphan, 'resale refund')} of no resold return")
    resold = TicketReturn.objects.filter(event_id=event.pk, status=ReturnStatus.RESOLD).count()
    return Found(problems, f"{plural(resold, 'resold return')}, refunds only after a paid resale")


@check(invariant=8)
def resale_refunds_flagged(event: Event, options: Options) -> Found:
    """A resold return's refund that failed is listed for staff (the
    payments' "Refund failed" filter) while its purchase is paid for."""
    failed = resale_refunds_failed().filter(
        event_id=event.pk,
        claim_id__in=Payment.objects.filter(status=PaymentStatus.CONFIRMED).values("claim_id"),
    )
    flagged = Payment.objects.filter(attention_filters()["refund_failed"][1]).values("claim_id")
    unseen = failed.exclude(claim_id__in=flagged).count()
    problems = [f"{plural(unseen, 'failed resale refund')} not flagged for staff"] if unseen else []
    return Found(problems, f"{plural(failed.count(), 'failed resale refund')} flagged for staff")


@check(invariant=8, when=When.SETTLED)
def resale_refunds_settled(event: Event, options: Options) -> Found:
    """Once beat has caught up, every resold return's refund was opened and
    the gateway took it: pending there, paid, or failed (and flagged, above)."""
    owed = TicketReturn.objects.filter(
        event_id=event.pk, status=ReturnStatus.RESOLD, refund_amount__gt=0
    )
    unsent = owed.filter(refund_id__isnull=True).count()
    unanswered = owed.filter(
        refund_id__in=Refund.objects.filter(status=RefundStatus.REQUESTED).values("pk")
    ).count()
    paid = owed.filter(
        refund_id__in=Refund.objects.filter(status=RefundStatus.PROCESSED).values("pk")
    ).count()
    problems = []
    if unsent:
        problems.append(f"{plural(unsent, 'resold return')} whose refund was never sent")
    if unanswered:
        problems.append(f"{plural(unanswered, 'resale refund')} the gateway has not taken")
    return Found(problems, f"{plural(paid, 'resale refund')} paid")


@check(invariant=8)
def void_codes_refused(event: Event, options: Options) -> Found:
    """No void ticket was checked in after it was voided, and no ticket on
    resale was checked in; an accepted transfer's old ticket is void."""
    let_in = value(
        f"SELECT COUNT(*) FROM {ISSUED} WHERE event_id = %s AND ("  # noqa: S608
        "(status = %s AND checked_in_at > voided_at) "
        "OR (status = %s AND checked_in_at IS NOT NULL))",
        [event.pk, VOID, IssuedTicketStatus.ON_RESALE.value],
    )
    transferred_live = value(
        f"SELECT COUNT(*) FROM {TRANSFER} t JOIN {ISSUED} o ON o.id = t.ticket_id "  # noqa: S608
        "WHERE t.event_id = %s AND t.status = %s AND o.status <> %s",
        [event.pk, TransferStatus.ACCEPTED.value, VOID],
    )
    problems = []
    if let_in:
        problems.append(f"{plural(let_in, 'void or on-resale ticket')} checked in")
    if transferred_live:
        problems.append(f"{plural(transferred_live, 'transferred ticket')} still live")
    return Found(problems, "void and on-resale codes never checked in")
