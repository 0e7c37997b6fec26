"""Reads across apps for the people watching a sale: the numbers of the
organizer's dashboard, the families of ``/metrics`` that are computed at
scrape time, and what readiness looks at. Postgres is the truth; Redis only
where it is the thing measured (the waiting line's size as customers see
it)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, DateTimeField, F, Func, Q, QuerySet, Sum, Value
from django.utils import timezone

from claims.domain import HOLDING_STATUSES, IssuedTicketStatus
from claims.models import Claim, IssuedTicket
from claims.selectors import tier_ticket_counts
from console.after_sale import AfterSale, TierPrice, after_sale
from events.domain import LIVE_STATUSES, EventStatus
from events.models import Event
from ledger.domain import Bucket
from ledger.models import AccountEntry
from payments.attention import attention_filters
from payments.domain import EventKind, PaymentStatus
from payments.models import Payment, PaymentEvent
from queueing.domain import QueueStatus
from queueing.models import QueueEntry
from queueing.selectors import admission_last_tick, queue_length

# An ended event stays in the metrics this long, so its last numbers are seen.
ENDED_REPORTED_FOR = timedelta(days=1)
# Rates are measured over these windows.
ADMISSION_RATE_WINDOW = timedelta(seconds=60)
SELL_RATE_WINDOW = timedelta(minutes=5)


def events_reported(now: datetime | None = None) -> QuerySet[Event]:
    """Live events, and events that ended in the last day."""
    now = now or timezone.now()
    return Event.objects.filter(
        Q(status__in=LIVE_STATUSES)
        | Q(status=EventStatus.ENDED, updated_at__gte=now - ENDED_REPORTED_FOR)
    ).order_by("sale_start", "name")


def events_on_sale(now: datetime | None = None) -> QuerySet[Event]:
    """ACTIVE events inside their sale window: the admission tick must run
    for each of them every interval."""
    now = now or timezone.now()
    return Event.objects.filter(status=EventStatus.ACTIVE, sale_start__lte=now, sale_end__gt=now)


def _per_event(qs: QuerySet, value: str = "n") -> dict[uuid.UUID, int]:
    return {row["event_id"]: int(row[value] or 0) for row in qs}


def admitted_now(event_ids: list[uuid.UUID], now: datetime) -> dict[uuid.UUID, int]:
    """Customers holding a live admission (may claim right now)."""
    return _per_event(
        QueueEntry.objects.filter(
            event_id__in=event_ids, status=QueueStatus.ADMITTED, admission_expires_at__gt=now
        )
        .values("event_id")
        .annotate(n=Count("id"))
        .order_by()
    )


def admitted_since(
    event_ids: list[uuid.UUID], since: datetime | None = None
) -> dict[uuid.UUID, int]:
    """Customers ever admitted (each queue entry that got an admission),
    optionally only since ``since``. Never decreases: a counter."""
    qs = QueueEntry.objects.filter(
        event_id__in=event_ids,
        status__in=[QueueStatus.ADMITTED, QueueStatus.COMPLETED, QueueStatus.EXPIRED],
        admitted_at__isnull=False,
    )
    if since is not None:
        qs = qs.filter(admitted_at__gte=since)
    return _per_event(qs.values("event_id").annotate(n=Count("id")).order_by())


@dataclass(frozen=True)
class TierNumbers:
    id: uuid.UUID
    event_id: uuid.UUID
    name: str
    price: int
    inventory: int
    sold: int  # tickets on resale included, until resold
    claimed: int
    free: int
    revenue: int  # minor units kept: paid, less refunds (``tier_revenue``)
    on_resale: int = 0


# The buckets of a purchase's account that are the organizer's money: what
# backs the tickets it holds, the fees kept, what backs tickets sent on.
KEPT = (Bucket.HELD.value, Bucket.FEE.value, Bucket.SENT.value)


def tier_revenue(event_id: uuid.UUID) -> dict[uuid.UUID, int]:
    """What each tier's purchases keep, read from their accounts: what was
    paid, less what went back, is on its way back or is owed after a resale,
    and what the bank took back. A resold ticket counts once (its buyer's
    payment; its first buyer's is refunded but the fee), a cancelled order
    only for the fee it kept."""
    rows = (
        AccountEntry.objects.filter(claim__event_id=event_id)
        .values("claim__tier_id")
        .annotate(
            into=Sum("amount", filter=Q(credit__in=KEPT)),
            out=Sum("amount", filter=Q(debit__in=KEPT)),
        )
        .order_by()
    )
    return {
        row["claim__tier_id"]: int(row["into"] or 0) - int(row["out"] or 0) for row in rows
    }


def tier_numbers(event: Event) -> list[TierNumbers]:
    counts = tier_ticket_counts(event_id=event.pk)
    revenue = tier_revenue(event.pk)
    return [
        TierNumbers(
            id=tier.pk,
            event_id=event.pk,
            name=tier.name,
            price=tier.price,
            inventory=tier.inventory,
            sold=counts[tier.pk].sold if tier.pk in counts else 0,
            claimed=counts[tier.pk].claimed if tier.pk in counts else 0,
            free=counts[tier.pk].free if tier.pk in counts else 0,
            revenue=revenue.get(tier.pk, 0),
            on_resale=counts[tier.pk].on_resale if tier.pk in counts else 0,
        )
        for tier in event.tiers.all()
    ]


def tickets_taken_since(event_id: uuid.UUID, since: datetime) -> int:
    """Tickets in claims made since ``since`` that still hold them."""
    total = Claim.objects.filter(
        event_id=event_id, created_at__gte=since, status__in=HOLDING_STATUSES
    ).aggregate(n=Sum("quantity"))["n"]
    return int(total or 0)


def payments_attention(event_ids: list[uuid.UUID]) -> dict[uuid.UUID, dict[str, int]]:
    """Payments staff must look at, per event and per reason: one count for
    each of the staff payment list's "needs attention" filters (stuck,
    blocked, overdue, flagged, refund required/pending/failed, disputed), in
    one query. Every event and every reason is present, zeros included."""
    filters = attention_filters()
    result = {event_id: dict.fromkeys(filters, 0) for event_id in event_ids}
    rows = (
        Payment.objects.filter(claim__event_id__in=event_ids)
        .values("claim__event_id")
        .annotate(**{reason: Count("id", filter=q) for reason, (_, q) in filters.items()})
        .order_by()
    )
    for row in rows:
        counts: dict[str, Any] = dict(row)
        result[row["claim__event_id"]] = {reason: int(counts[reason]) for reason in filters}
    return result


def attention_reasons() -> dict[str, str]:
    """Each reason's key and its label, in the staff payment list's order."""
    return {reason: label for reason, (label, _) in attention_filters().items()}


def _actor(actor: str) -> str:
    """``staff:<user>`` names a person; a metric label names the role."""
    return actor.split(":", 1)[0] or "unknown"


def payment_totals(event_ids: list[uuid.UUID]) -> dict[tuple[uuid.UUID, str, str], int]:
    """Payments that reached each status, per event and by whom
    (event, status, actor) -> count: INITIALIZING is every payment written,
    every other status a state change in the append-only payment log. The
    log only grows, so each count only grows."""
    totals: dict[tuple[uuid.UUID, str, str], int] = defaultdict(int)
    for row in (
        Payment.objects.filter(claim__event_id__in=event_ids)
        .values("claim__event_id")
        .annotate(n=Count("id"))
        .order_by()
    ):
        totals[(row["claim__event_id"], PaymentStatus.INITIALIZING.value, "customer")] += row["n"]
    for change in (
        PaymentEvent.objects.filter(
            payment__claim__event_id__in=event_ids, kind=EventKind.STATE_CHANGE
        )
        .values("payment__claim__event_id", "to_status", "actor")
        .annotate(n=Count("id"))
        .order_by()
    ):
        key = (change["payment__claim__event_id"], change["to_status"], _actor(change["actor"]))
        totals[key] += change["n"]
    return dict(totals)


@dataclass
class EventNumbers:
    """Everything the dashboard shows about one event, read at one moment."""

    event: Event
    read_at: datetime
    waiting: int
    admitted: int
    admitted_total: int
    admission_rate_per_minute: float
    sell_rate_per_minute: float
    eta_seconds: float | None  # to sell-out at the current rate; None: not selling
    last_tick: datetime | None
    tiers: list[TierNumbers] = field(default_factory=list)
    attention: dict[str, int] = field(default_factory=dict)
    after_sale: AfterSale = field(default_factory=AfterSale)

    @property
    def totals(self) -> dict[str, int]:
        return {
            name: sum(getattr(t, name) for t in self.tiers)
            for name in ("inventory", "sold", "claimed", "free", "revenue", "on_resale")
        }


def event_numbers(event: Event, now: datetime | None = None) -> EventNumbers:
    now = now or timezone.now()
    ids = [event.pk]
    tiers = tier_numbers(event)
    free = sum(t.free for t in tiers)
    admitted_recently = admitted_since(ids, now - ADMISSION_RATE_WINDOW).get(event.pk, 0)
    taken = tickets_taken_since(event.pk, now - SELL_RATE_WINDOW)
    sell_rate = taken / SELL_RATE_WINDOW.total_seconds()
    return EventNumbers(
        event=event,
        read_at=now,
        waiting=queue_length(event_id=event.pk),
        admitted=admitted_now(ids, now).get(event.pk, 0),
        admitted_total=admitted_since(ids).get(event.pk, 0),
        admission_rate_per_minute=admitted_recently * 60 / ADMISSION_RATE_WINDOW.total_seconds(),
        sell_rate_per_minute=sell_rate * 60,
        eta_seconds=(free / sell_rate) if sell_rate > 0 and free > 0 else None,
        last_tick=admission_last_tick(event_id=event.pk),
        tiers=tiers,
        attention=payments_attention([event.pk])[event.pk],
        after_sale=after_sale(event.pk, [TierPrice(t.id, t.name, t.price) for t in tiers]),
    )


# The dashboard's charts: at most this many points along the sale, each a
# step from this list wide (the first that fits).
SERIES_POINTS = 120
SERIES_STEPS = (5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400)


@dataclass(frozen=True)
class SaleSeries:
    """The sale over time, one point per step from ``start``: tickets sold
    so far, people in the waiting line, admissions per minute."""

    start: datetime
    step: int  # seconds
    sold: list[int]
    waiting: list[int]
    admitted_per_minute: list[float]

    @property
    def times(self) -> list[datetime]:
        return [self.start + timedelta(seconds=self.step * i) for i in range(len(self.sold))]


def _per_step(
    rows: QuerySet, moment: str, start: datetime, step: int, points: int, value: Any = None
) -> list[int]:
    """How many rows (or the sum of ``value``) fall in each step by their
    ``moment``; rows before ``start`` count in the first step."""
    counts = [0] * points
    binned = (
        rows.filter(**{f"{moment}__isnull": False})
        .annotate(
            at=Func(
                Value(timedelta(seconds=step)),
                F(moment),
                Value(start),
                function="date_bin",
                output_field=DateTimeField(),
            )
        )
        .values("at")
        .annotate(n=value if value is not None else Count("pk"))
        .order_by()
    )
    for row in binned:
        i = int((row["at"] - start).total_seconds() // step)
        counts[min(max(i, 0), points - 1)] += int(row["n"] or 0)
    return counts


def _running(counts: list[int]) -> list[int]:
    total, out = 0, []
    for n in counts:
        total += n
        out.append(total)
    return out


def _rate_per_minute(running: list[int], step: int) -> list[float]:
    """Per minute, over the minute (at least one step) up to each point: as
    the dashboard's "admission rate" card, and smooth whatever the step."""
    k = max(1, -(-int(ADMISSION_RATE_WINDOW.total_seconds()) // step))
    return [
        round((n - (running[i - k] if i >= k else 0)) * 60 / (k * step), 1)
        for i, n in enumerate(running)
    ]


def sale_series(event: Event, now: datetime | None = None) -> SaleSeries | None:
    """The sale from its opening (the pre-queue's, if earlier) to now or
    its end; None before it opens."""
    now = now or timezone.now()
    start = min(filter(None, (event.sale_start, event.prequeue_opens_at)))
    end = min(now, event.sale_end) if event.sale_end else now
    if end <= start:
        return None
    span = (end - start).total_seconds()
    step = next((s for s in SERIES_STEPS if span / s <= SERIES_POINTS), SERIES_STEPS[-1])
    points = int(span // step) + 1
    entries = QueueEntry.objects.filter(event_id=event.pk)
    joined = _per_step(entries, "joined_at", start, step, points)
    admitted = _per_step(entries, "admitted_at", start, step, points)
    # Left the line without being admitted (gave up, or the sale ended).
    gave_up = _per_step(
        entries.filter(admitted_at__isnull=True), "finished_at", start, step, points
    )
    # Tickets held by paid purchases, from their accounts: a sale adds its
    # tickets when paid, a cancellation takes them away, a resale or a
    # transfer moves one from one purchase to another (the sold figure's
    # count, at each moment).
    sold = _per_step(
        AccountEntry.objects.filter(claim__event_id=event.pk).exclude(tickets=0),
        "created_at", start, step, points, value=Sum("tickets"),
    )  # fmt: skip
    waiting = [
        max(0, j - a - g)
        for j, a, g in zip(_running(joined), _running(admitted), _running(gave_up), strict=True)
    ]
    return SaleSeries(
        start=start,
        step=step,
        sold=_running(sold),
        waiting=waiting,
        admitted_per_minute=_rate_per_minute(_running(admitted), step),
    )


def door_counts(*, event_id: uuid.UUID) -> dict[str, int]:
    """The door's running count: tickets checked in ("in") of the tickets
    that may come in (issued and not void: "of")."""
    counts = IssuedTicket.objects.filter(event_id=event_id).aggregate(
        checked_in=Count("pk", filter=Q(status=IssuedTicketStatus.USED)),
        valid=Count("pk", filter=Q(status=IssuedTicketStatus.VALID)),
    )
    return {"in": counts["checked_in"], "of": counts["checked_in"] + counts["valid"]}
