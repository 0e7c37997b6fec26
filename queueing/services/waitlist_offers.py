"""Offers from the waiting list: when tickets free up (``tickets_freed``, and
every admission tick as the safety net), the next entries are admitted, one
ticket each, exactly as the line admits: an ADMITTED queue entry with a
window, a token, a push on the customer's socket, and an email.

The rule that keeps offers honest (invariant 1 reaches the list): under the
event's row lock, the lock the admission tick takes, an offer is made only
while its tier has a free ticket not already offered, and the event has a
free ticket not held by any admission (offers included). So offers never
exceed the tickets that freed up, and the line's tick never admits someone
for a ticket an offer stands for. A late payment that re-instates a released
claim can take such a ticket back (invariant 5 comes first): the newest offer
of that tier is then withdrawn and its entry goes back to the head of the
list."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import IntegrityError, connection, transaction
from django.db.models import Count
from django.utils import timezone

from events.domain import LIVE_STATUSES as EVENT_LIVE_STATUSES
from events.domain import EventStatus, is_on_sale
from events.models import Event, TicketTier
from fairqueue.locks import event_row_lock
from fairqueue.news import send_on_commit
from inventory.selectors import free_tickets_by_tier, resale_tickets_by_tier
from queueing.domain import WAITLIST_LIVE_STATUSES, EndReason, QueueStatus, WaitlistStatus
from queueing.models import QueueEntry, WaitlistEntry, WaitlistState
from queueing.pushes import send_expired
from queueing.services.admission import admitted_tell
from queueing.services.clock import admission_clock_advance
from queueing.services.expiry import admissions_expire
from queueing.services.join import join_barred
from queueing.services.prequeue import ranks_draw
from queueing.services.waitlist import draw_due_at, returns_open_after_sale
from queueing.signals import waitlist_offered
from queueing.store import queue_store

logger = logging.getLogger(__name__)

_WAITLIST = WaitlistEntry._meta.db_table
_QUEUE = QueueEntry._meta.db_table

# Offers settled from their admissions: claimed (COMPLETED) is ACCEPTED;
# lapsed, given up or closed with the sale is LAPSED.
_SETTLE_SQL = f"""
UPDATE {_WAITLIST} AS w
SET status = CASE WHEN q.status = %(completed)s THEN %(accepted)s ELSE %(lapsed)s END,
    finished_at = %(now)s
FROM {_QUEUE} AS q
WHERE w.event_id = %(event_id)s AND w.status = %(offered)s AND w.queue_entry_id = q.id
  AND q.status <> %(admitted)s
"""  # noqa: S608  (table names come from the models, values are parameters)

# How many entries one offer round looks at (those that cannot be served now
# are skipped: their tier has no ticket, or they hold an admission already).
_LOOK_AHEAD = 500


@dataclass
class OfferReport:
    event_id: str
    drawn: int = 0
    settled: int = 0
    offered: list[str] = field(default_factory=list)  # customers
    withdrawn: list[str] = field(default_factory=list)  # customers
    closed: int = 0


def _settle(event_id: uuid.UUID | str, now: datetime) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            _SETTLE_SQL,
            {
                "completed": QueueStatus.COMPLETED.value,
                "accepted": WaitlistStatus.ACCEPTED.value,
                "lapsed": WaitlistStatus.LAPSED.value,
                "now": now,
                "event_id": event_id,
                "offered": WaitlistStatus.OFFERED.value,
                "admitted": QueueStatus.ADMITTED.value,
            },
        )
        settled: int = cursor.rowcount
    return settled


def _draw(event_id: uuid.UUID | str, now: datetime) -> int:
    """The first minute's entries get a random order (the pre-queue's draw),
    once, with the state's mark in the same transaction."""
    with transaction.atomic():
        marked = WaitlistState.objects.filter(event_id=event_id, drawn_at__isnull=True).update(
            drawn_at=now
        )
        if not marked:
            return 0
        ids = list(
            WaitlistEntry.objects.filter(
                event_id=event_id, status=WaitlistStatus.WAITING, drawn=True, score=0
            ).values_list("id", flat=True)
        )
        ranks_draw(table=_WAITLIST, ids=ids, status=WaitlistStatus.WAITING.value)
    logger.info("waiting list drawn event=%s entries=%s", event_id, len(ids))
    return len(ids)


def _close(event_id: uuid.UUID | str, now: datetime) -> int:
    """The sale is over and returns are closed: nobody waits for an offer
    any more, and an offer still open after the sale ends with the returns
    (LAPSED once settled)."""
    closed = WaitlistEntry.objects.filter(event_id=event_id, status=WaitlistStatus.WAITING).update(
        status=WaitlistStatus.CLOSED, finished_at=now
    )
    ended = list(
        QueueEntry.objects.filter(
            event_id=event_id, status=QueueStatus.ADMITTED, offer_tier__isnull=False
        ).values_list("id", "customer_id")
    )
    if ended:
        QueueEntry.objects.filter(
            pk__in=[pk for pk, _ in ended], status=QueueStatus.ADMITTED
        ).update(status=QueueStatus.EXPIRED, finished_at=now, end_reason=EndReason.SALE_ENDED)
        send_expired(
            event_id=event_id,
            customer_ids=[str(c) for _, c in ended],
            reason=EndReason.SALE_ENDED.value,
        )
    return closed


def waitlist_tick_event(*, event_id: uuid.UUID | str) -> OfferReport:
    """One round for one event: lapsed offers settled, the first minute
    drawn when it has passed, offers withdrawn where a re-instated payment
    took their ticket, and the next entries offered the tickets free. Safe to
    re-run; concurrent rounds are serialised by the event's row lock."""
    report = OfferReport(event_id=str(event_id))
    now = timezone.now()
    state = WaitlistState.objects.filter(event_id=event_id).first()
    event = Event.objects.filter(pk=event_id).first()
    if state is None or event is None:
        return report
    if event.status not in EVENT_LIVE_STATUSES:
        _clock_after_sale(event_id, now)
    if WaitlistEntry.objects.filter(event_id=event_id, status=WaitlistStatus.OFFERED).exists():
        admissions_expire(event_id=event_id, now=now)
    report.settled = _settle(event_id, now)
    on_sale = is_on_sale(
        status=event.status, now=now, sale_start=event.sale_start, sale_end=event.sale_end
    )
    after_sale = not on_sale and returns_open_after_sale(event, now)
    if not on_sale and not after_sale:
        report.closed = _close(event_id, now)
        report.settled += _settle(event_id, now)
        return report
    first_only = False
    if state.drawn_at is None:
        # Before the first minute is drawn only those put first on the list
        # (admitted when nothing was left) are offered: they are ahead of the
        # draw, whatever it gives.
        first_only = now < draw_due_at(state)
        if not first_only:
            report.drawn = _draw(event_id, now)
    if event.status == EventStatus.PAUSED:
        return report  # a paused sale admits nobody, from the line or the list
    _offer(event_id, now, report, resale_only=after_sale, first_only=first_only)
    return report


def _clock_after_sale(event_id: uuid.UUID | str, now: datetime) -> None:
    """The line's tick, which keeps the event's admission clock, runs no
    more once the sale has ended, but offers outlive it while returns are
    open: the list's round takes the tick's place. Without it a clock the
    line left stopped (Redis was unreachable at the end) would hold every
    later offer's window open for good."""
    redis_up = queue_store().ping()
    with transaction.atomic():
        if event_row_lock(Event.objects.filter(pk=event_id), no_key=True) is None:
            return
        clock = admission_clock_advance(event_id=event_id, now=now, redis_up=redis_up)
    if clock.given_back:
        # The line's Redis sets went with it: only the customers hear.
        admitted_tell(event_id, clock.given_back)


def _offer(
    event_id: uuid.UUID | str,
    now: datetime,
    report: OfferReport,
    *,
    resale_only: bool,
    first_only: bool = False,
) -> None:
    """``resale_only``: the sale is over, returns are open: only tickets on
    resale are offered (a ticket never sold stays unsold), and offers made
    before the end that stand for more than those are withdrawn.
    ``first_only``: only entries put first on the list (``FIRST_SCORE``)."""
    offers: list[tuple[uuid.UUID, uuid.UUID, datetime]] = []
    with transaction.atomic():
        event = event_row_lock(Event.objects.filter(pk=event_id), no_key=True)
        if event is None:
            return
        if resale_only:
            free = resale_tickets_by_tier(event_id=event_id)
        else:
            free = free_tickets_by_tier(event_id=event_id)
        admitted = QueueEntry.objects.filter(event_id=event_id, status=QueueStatus.ADMITTED)
        held_by_offers = dict(
            admitted.filter(offer_tier__isnull=False)
            .values_list("offer_tier_id")
            .annotate(n=Count("id"))
            .order_by()
        )
        room = sum(free.values()) - admitted.count()
        tier_room = {tier: n - held_by_offers.get(tier, 0) for tier, n in free.items()}
        report.withdrawn, room = _withdraw(event_id, tier_room, room, now)
        if room <= 0 or not any(n > 0 for n in tier_room.values()):
            return
        # An entry for any tier is offered the cheapest tier that has a ticket.
        tier_order = list(
            TicketTier.objects.filter(event_id=event_id)
            .order_by("price", "sort_order", "name")
            .values_list("id", flat=True)
        )
        expires_at = (now + timedelta(seconds=event.admission_window_seconds)).replace(
            microsecond=0
        )
        waiting = WaitlistEntry.objects.filter(event_id=event_id, status=WaitlistStatus.WAITING)
        if first_only:
            waiting = waiting.filter(score__lt=0)
        waiting = waiting.order_by("score", "id")[:_LOOK_AHEAD]
        for entry in waiting:
            if room <= 0:
                break
            wanted = [entry.tier_id] if entry.tier_id else tier_order
            tier_id = next((t for t in wanted if tier_room.get(t, 0) > 0), None)
            if tier_id is None:
                continue
            if join_barred(event_id=event_id, customer_id=entry.customer_id) is not None:
                # Bought tickets meanwhile: one purchase per customer (invariant 6).
                WaitlistEntry.objects.filter(pk=entry.pk, status=WaitlistStatus.WAITING).update(
                    status=WaitlistStatus.CLOSED, finished_at=now
                )
                continue
            admission = _admit(entry, tier_id=tier_id, now=now, expires_at=expires_at)
            if admission is None:
                continue
            room -= 1
            tier_room[tier_id] -= 1
            offers.append((admission, entry.customer_id, expires_at))
            send_on_commit(
                waitlist_offered,
                sender=WaitlistEntry,
                entry_id=entry.pk,
                event_id=event_id,
                customer_id=entry.customer_id,
                expires_at=expires_at,
            )
    if offers and not resale_only:
        # Redis' admitted set holds every admission of a live line, offers
        # too (the reconciliation and the settled check compare it with
        # Postgres); a line that ended has no sets.
        queue_store().admitted_rescore(
            event_id=event_id,
            members=((str(c), int(until.timestamp() * 1000)) for _, c, until in offers),
        )
    if offers:
        admitted_tell(event_id, offers)
        report.offered = [str(customer) for _, customer, _ in offers]
        logger.info("waiting list offers event=%s count=%s", event_id, len(offers))
    if report.withdrawn:
        queue_store().release_admitted(event_id=event_id, customer_ids=report.withdrawn)
        send_expired(
            event_id=event_id,
            customer_ids=report.withdrawn,
            reason=EndReason.OFFER_WITHDRAWN.value,
        )


def _admit(
    entry: WaitlistEntry, *, tier_id: uuid.UUID, now: datetime, expires_at: datetime
) -> uuid.UUID | None:
    """The offer: an ADMITTED queue entry for one ticket of the tier, and the
    list entry OFFERED with it, in a savepoint. None when the customer has a
    live place in the line (joined it again: the line admits them) or left
    the list meanwhile."""
    try:
        with transaction.atomic():
            admission = QueueEntry.objects.create(
                event_id=entry.event_id,
                customer_id=entry.customer_id,
                status=QueueStatus.ADMITTED,
                score=entry.score,
                admitted_at=now,
                admission_expires_at=expires_at,
                offer_tier_id=tier_id,
            )
            offered = WaitlistEntry.objects.filter(
                pk=entry.pk, status=WaitlistStatus.WAITING
            ).update(
                status=WaitlistStatus.OFFERED,
                offered_at=now,
                offer_tier_id=tier_id,
                queue_entry_id=admission.pk,
            )
            if not offered:
                raise _LeftMeanwhile
    except (IntegrityError, _LeftMeanwhile):
        return None
    return admission.pk


class _LeftMeanwhile(Exception):
    """Rolls the offer's savepoint back."""


def _withdraw(
    event_id: uuid.UUID | str, tier_room: dict[uuid.UUID, int], room: int, now: datetime
) -> tuple[list[str], int]:
    """Offers that stand for more tickets than are free (a late payment
    re-instated a claim on one of them): the newest go, their admission
    EXPIRED (``offer_withdrawn``) and their entry WAITING again with its
    score, so it is first in line for the next ticket. Returns the customers
    and the event's room after it (``tier_room`` is kept up to date)."""
    withdrawn: list[str] = []
    offers = QueueEntry.objects.filter(
        event_id=event_id, status=QueueStatus.ADMITTED, offer_tier__isnull=False
    ).order_by("-admitted_at", "-id")
    over = [(tier_id, -n) for tier_id, n in tier_room.items() if n < 0]
    for tier_id, excess in over:
        for admission_id, customer_id in offers.filter(offer_tier_id=tier_id).values_list(
            "id", "customer_id"
        )[:excess]:
            if _withdraw_one(admission_id, now):
                withdrawn.append(str(customer_id))
                tier_room[tier_id] += 1
                room += 1
    if room < 0:
        for admission_id, customer_id, tier_id in offers.values_list(
            "id", "customer_id", "offer_tier_id"
        )[:-room]:
            if _withdraw_one(admission_id, now):
                withdrawn.append(str(customer_id))
                tier_room[tier_id] = tier_room.get(tier_id, 0) + 1
                room += 1
    return withdrawn, room


def _withdraw_one(admission_id: uuid.UUID, now: datetime) -> bool:
    with transaction.atomic():
        expired = QueueEntry.objects.filter(pk=admission_id, status=QueueStatus.ADMITTED).update(
            status=QueueStatus.EXPIRED,
            finished_at=now,
            end_reason=EndReason.OFFER_WITHDRAWN.value,
        )
        if not expired:
            return False
        WaitlistEntry.objects.filter(
            queue_entry_id=admission_id, status=WaitlistStatus.OFFERED
        ).update(
            status=WaitlistStatus.WAITING,
            offered_at=None,
            offer_tier_id=None,
            queue_entry=None,
            emailed_at=None,  # the next offer is mailed again
        )
    return True


def waitlist_tick_all() -> list[OfferReport]:
    """Every event with someone on its list; one failing does not stop the
    others."""
    reports = []
    events = (
        WaitlistEntry.objects.filter(status__in=WAITLIST_LIVE_STATUSES)
        .values_list("event_id", flat=True)
        .distinct()
    )
    for event_id in list(events):
        try:
            reports.append(waitlist_tick_event(event_id=event_id))
        except Exception:
            logger.exception("waiting list round failed event=%s", event_id)
    return reports
