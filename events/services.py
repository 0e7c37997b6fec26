"""Writes for events and tiers. The only place that changes them."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from events.domain import EVENT_MACHINE, EventStatus, sale_window_errors
from events.inventory import inventory_sync_event
from events.models import Event, Organizer, Ticket, TicketTier
from fairqueue.broadcast import event_group, push_after_commit
from fairqueue.errors import InvalidInput, InvalidTransition, NotFound

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TierSpec:
    name: str
    price: int
    inventory: int


def _validate_tier(spec: TierSpec) -> None:
    errors = {}
    if not spec.name.strip():
        errors["name"] = "A tier needs a name."
    if spec.price <= 0:
        errors["price"] = "The price must be positive (in minor units)."
    if spec.inventory <= 0:
        errors["inventory"] = "The inventory must be positive."
    if errors:
        raise InvalidInput("The tier is not valid.", details={"tier": spec.name, **errors})


def _unique_slug(name: str) -> str:
    base = slugify(name)[:200] or "event"
    slug, n = base, 1
    while Event.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def tier_provision_tickets(*, tier: TicketTier) -> None:
    """Make the ticket rows match the tier's inventory. Only free tickets can
    be removed; an inventory below what is already held is refused."""
    existing = Ticket.objects.filter(tier=tier).count()
    if tier.inventory > existing:
        Ticket.objects.bulk_create(
            [Ticket(tier=tier) for _ in range(tier.inventory - existing)], batch_size=5000
        )
    elif tier.inventory < existing:
        surplus = existing - tier.inventory
        free_ids = list(
            Ticket.objects.select_for_update(skip_locked=True)
            .filter(tier=tier, claim__isnull=True)
            .values_list("id", flat=True)[:surplus]
        )
        if len(free_ids) < surplus:
            raise InvalidInput(
                "The inventory cannot go below the tickets already claimed or sold.",
                details={"inventory": tier.inventory, "held": existing - len(free_ids)},
            )
        Ticket.objects.filter(id__in=free_ids).delete()
    if tier.event.status != EventStatus.DRAFT:
        transaction.on_commit(lambda: inventory_sync_event(event_id=tier.event_id))


@transaction.atomic
def tier_create(
    *, event: Event, name: str, price: int, inventory: int, sort_order: int = 0
) -> TicketTier:
    _validate_tier(TierSpec(name, price, inventory))
    if event.status == EventStatus.ENDED:
        raise InvalidTransition("Tiers cannot be added to an ended event.")
    if TicketTier.objects.filter(event=event, name=name).exists():
        raise InvalidInput("A tier with this name exists.", details={"name": name})
    tier = TicketTier.objects.create(
        event=event, name=name, price=price, inventory=inventory, sort_order=sort_order
    )
    tier_provision_tickets(tier=tier)
    return tier


@transaction.atomic
def event_create(
    *,
    organizer: Organizer,
    name: str,
    sale_start: datetime,
    sale_end: datetime,
    tiers: list[TierSpec],
    description: str = "",
    venue: str = "",
    starts_at: datetime | None = None,
    currency: str = "NGN",
    prequeue_opens_at: datetime | None = None,
    max_tickets_per_customer: int = 1,
    admission_batch_size: int = 500,
    admission_window_seconds: int = 300,
    max_active_admitted: int = 5000,
) -> Event:
    errors = sale_window_errors(
        sale_start=sale_start, sale_end=sale_end, prequeue_opens_at=prequeue_opens_at
    )
    if max_tickets_per_customer < 1:
        errors["max_tickets_per_customer"] = "Must be at least 1."
    if admission_batch_size < 1 or max_active_admitted < 1 or admission_window_seconds < 1:
        errors["admission"] = "Admission settings must be positive."
    if not name.strip():
        errors["name"] = "An event needs a name."
    if errors:
        raise InvalidInput("The event is not valid.", details=errors)
    for spec in tiers:
        _validate_tier(spec)
    event = Event.objects.create(
        organizer=organizer,
        name=name,
        slug=_unique_slug(name),
        description=description,
        venue=venue,
        starts_at=starts_at,
        currency=currency.upper(),
        sale_start=sale_start,
        sale_end=sale_end,
        prequeue_opens_at=prequeue_opens_at,
        max_tickets_per_customer=max_tickets_per_customer,
        admission_batch_size=admission_batch_size,
        admission_window_seconds=admission_window_seconds,
        max_active_admitted=max_active_admitted,
    )
    for order, spec in enumerate(tiers):
        tier_create(
            event=event,
            name=spec.name,
            price=spec.price,
            inventory=spec.inventory,
            sort_order=order,
        )
    return event


def _transition(event_id: object, target: EventStatus) -> Event:
    """Conditional update: only from a state that may move to ``target``.
    Zero rows means the event changed under us or the move is illegal."""
    sources = EVENT_MACHINE.sources_of(target)
    updated = Event.objects.filter(pk=event_id, status__in=sources).update(
        status=target, updated_at=timezone.now()
    )
    event = Event.objects.filter(pk=event_id).first()
    if event is None:
        raise NotFound("No such event.")
    if not updated:
        raise InvalidTransition(
            f"The event cannot go from {event.status} to {target}.",
            details={"from": event.status, "to": str(target)},
        )
    return event


def _broadcast(event: Event, kind: str) -> None:
    push_after_commit(event_group(event.pk), {"type": kind, "event_id": str(event.pk)})


@transaction.atomic
def event_activate(*, event_id: object) -> Event:
    event = Event.objects.filter(pk=event_id).first()
    if event is None:
        raise NotFound("No such event.")
    if event.status == EventStatus.DRAFT and not event.tiers.exists():
        raise InvalidTransition("An event needs at least one ticket tier to go on sale.")
    event = _transition(event_id, EventStatus.ACTIVE)
    transaction.on_commit(lambda: inventory_sync_event(event_id=event.pk))
    return event


@transaction.atomic
def event_pause(*, event_id: object) -> Event:
    event = _transition(event_id, EventStatus.PAUSED)
    _broadcast(event, "paused")
    return event


@transaction.atomic
def event_resume(*, event_id: object) -> Event:
    event = Event.objects.filter(pk=event_id).first()
    if event is not None and event.status != EventStatus.PAUSED:
        raise InvalidTransition(
            f"Only a paused event can be resumed (it is {event.status}).",
            details={"from": event.status, "to": EventStatus.ACTIVE.value},
        )
    event = _transition(event_id, EventStatus.ACTIVE)
    _broadcast(event, "resumed")
    return event


@transaction.atomic
def event_end(*, event_id: object) -> Event:
    event = _transition(event_id, EventStatus.ENDED)
    _broadcast(event, "ended")

    def close_queue() -> None:
        # Everyone still waiting or admitted is expired (queueing owns that).
        from queueing.services import queue_close

        queue_close(event_id=event.pk)

    transaction.on_commit(close_queue)
    return event


def event_mark_sold_out(*, event_id: object) -> bool:
    """ACTIVE -> SOLD_OUT when no tier has a free ticket left in Postgres.
    Returns True when this call made the change."""
    with transaction.atomic():
        if Ticket.objects.filter(tier__event_id=event_id, claim__isnull=True).exists():
            return False
        updated = Event.objects.filter(pk=event_id, status=EventStatus.ACTIVE).update(
            status=EventStatus.SOLD_OUT, updated_at=timezone.now()
        )
        if updated:
            push_after_commit(
                event_group(event_id), {"type": "sold_out", "event_id": str(event_id)}
            )
    return bool(updated)


def event_mark_available(*, event_id: object) -> bool:
    """SOLD_OUT -> ACTIVE when tickets came back (invariant 4)."""
    with transaction.atomic():
        if not Ticket.objects.filter(tier__event_id=event_id, claim__isnull=True).exists():
            return False
        updated = Event.objects.filter(pk=event_id, status=EventStatus.SOLD_OUT).update(
            status=EventStatus.ACTIVE, updated_at=timezone.now()
        )
        if updated:
            push_after_commit(
                event_group(event_id), {"type": "available", "event_id": str(event_id)}
            )
    return bool(updated)


def default_sale_window(now: datetime | None = None) -> tuple[datetime, datetime]:
    now = now or timezone.now()
    return now, now + timedelta(days=30)
