"""Reads for the organizer's dashboard about tickets after their sale:
returns (on resale now, resold, withdrawn) and the refunds resales paid,
the waiting list's length and the revenue it represents, and its offers.
Three queries per event however many tiers it has."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Count, OuterRef, Subquery, Sum

from claims.domain import ReturnStatus
from claims.models import TicketReturn
from payments.domain import OPEN_REFUND_STATUSES, RefundStatus
from payments.models import Refund
from queueing.domain import WaitlistStatus, any_tier_price
from queueing.models import WaitlistEntry

RETURNS_SHOWN = {
    ReturnStatus.ON_RESALE.value: "on_resale",
    ReturnStatus.RESOLD.value: "resold",
    ReturnStatus.WITHDRAWN.value: "withdrawn",
}


@dataclass(frozen=True)
class TierPrice:
    id: uuid.UUID
    name: str
    price: int


@dataclass(frozen=True)
class TierAfterSale:
    """One tier's returns and waiting list; ``id`` None is the waiting
    list's "any tier" (no returns of its own)."""

    id: uuid.UUID | None
    name: str
    on_resale: int = 0
    resold: int = 0
    withdrawn: int = 0
    waiting: int = 0
    waiting_revenue: int = 0  # minor units, at face value


@dataclass(frozen=True)
class Money:
    count: int = 0
    amount: int = 0  # minor units


@dataclass(frozen=True)
class AfterSale:
    tiers: list[TierAfterSale] = field(default_factory=list)
    # Each resold return's refund as it stands (the latest asked for); a
    # return whose refund is not opened yet is pending.
    refunds_paid: Money = Money()
    refunds_pending: Money = Money()
    refunds_failed: Money = Money()
    offers_open: int = 0
    offers_taken: int = 0
    offers_lapsed: int = 0

    def total(self, name: str) -> int:
        return sum(getattr(t, name) for t in self.tiers)


def after_sale(event_id: uuid.UUID, tiers: list[TierPrice]) -> AfterSale:
    """The event's figures after the sale, per tier (the tiers given, in
    their order, then "any tier", worth ``any_tier_price``)."""
    returns = _returns_by_tier(event_id)
    waitlist = _waitlist_by_tier(event_id)
    rows = [
        TierAfterSale(
            id=t.id,
            name=t.name,
            **returns.get(t.id, {}),
            waiting=waitlist[(t.id, WaitlistStatus.WAITING.value)],
            waiting_revenue=waitlist[(t.id, WaitlistStatus.WAITING.value)] * t.price,
        )
        for t in tiers
    ]
    anyone = waitlist[(None, WaitlistStatus.WAITING.value)]
    price = any_tier_price(t.price for t in tiers)
    rows.append(TierAfterSale(None, "any tier", waiting=anyone, waiting_revenue=anyone * price))

    def offers(status: WaitlistStatus) -> int:
        return sum(n for (_, s), n in waitlist.items() if s == status.value)

    paid, pending, failed = _resale_refunds(event_id)
    return AfterSale(
        tiers=rows,
        refunds_paid=paid,
        refunds_pending=pending,
        refunds_failed=failed,
        offers_open=offers(WaitlistStatus.OFFERED),
        offers_taken=offers(WaitlistStatus.ACCEPTED),
        offers_lapsed=offers(WaitlistStatus.LAPSED),
    )


def _returns_by_tier(event_id: uuid.UUID) -> dict[uuid.UUID, dict[str, int]]:
    found: dict[uuid.UUID, dict[str, int]] = defaultdict(dict)
    rows = (
        TicketReturn.objects.filter(event_id=event_id, status__in=list(RETURNS_SHOWN))
        .values_list("ticket__tier_id", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    for tier_id, status, n in rows:
        found[tier_id][RETURNS_SHOWN[status]] = n
    return found


def _waitlist_by_tier(event_id: uuid.UUID) -> defaultdict[tuple[uuid.UUID | None, str], int]:
    """(tier wanted, status) -> entries: the tier None is "any tier"."""
    rows = (
        WaitlistEntry.objects.filter(event_id=event_id)
        .values_list("tier_id", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    return defaultdict(int, {(tier_id, status): n for tier_id, status, n in rows})


def _resale_refunds(event_id: uuid.UUID) -> tuple[Money, Money, Money]:
    """Paid, pending (asked for, or not opened yet) and failed, from each
    resold return and the refund it names, in one query."""
    rows = (
        TicketReturn.objects.filter(
            event_id=event_id, status=ReturnStatus.RESOLD, refund_amount__gt=0
        )
        .annotate(
            refund_status=Subquery(
                Refund.objects.filter(pk=OuterRef("refund_id")).values("status")[:1]
            )
        )
        .values_list("refund_status")
        .annotate(n=Count("id"), total=Sum("refund_amount"))
        .order_by()
    )
    by_status: dict[str | None, Money] = {
        status: Money(n, int(total or 0)) for status, n, total in rows
    }

    def of(*statuses: str | None) -> Money:
        found = [by_status[s] for s in statuses if s in by_status]
        return Money(sum(m.count for m in found), sum(m.amount for m in found))

    pending = of(None, *(s.value for s in OPEN_REFUND_STATUSES))
    return of(RefundStatus.PROCESSED.value), pending, of(RefundStatus.FAILED.value)
