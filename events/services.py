"""Writes for events and tiers. The only place that changes them."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
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
    with transaction.atomic():
        # Two saves of one tier must not both count N rows and both add the
        # difference (more Ticket rows than inventory = oversell): one at a time.
        TicketTier.objects.select_for_update().filter(pk=tier.pk).values_list("pk").first()
        _provision(tier)


def _provision(tier: TicketTier) -> None:
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
        transaction.on_commit(lambda: inventory_sync_event(event_id=tier.event_id), robust=True)


@transaction.atomic
def tier_create(
    *, event: Event, name: str, price: int, inventory: int, sort_order: int = 0
) -> TicketTier:
    _validate_tier(TierSpec(name, price, inventory))
    if event.status == EventStatus.ENDED:
        raise InvalidTransition("Tiers cannot be added to an ended event.")
    try:
        # The unique (event, name) constraint decides between concurrent adds.
        with transaction.atomic():
            tier = TicketTier.objects.create(
                event=event, name=name, price=price, inventory=inventory, sort_order=sort_order
            )
    except IntegrityError as exc:
        raise InvalidInput("A tier with this name exists.", details={"name": name}) from exc
    tier_provision_tickets(tier=tier)
    _inventory_changed(event)
    return tier


@transaction.atomic
def tier_update(
    *, tier_id: object, name: str, price: int, inventory: int, sort_order: int = 0
) -> TicketTier:
    """Change a tier; its ticket rows follow the new inventory (never below
    the tickets already held)."""
    tier = TicketTier.objects.select_for_update().select_related("event").filter(pk=tier_id).first()
    if tier is None:
        raise NotFound("No such tier.", code="tier_not_found")
    _validate_tier(TierSpec(name, price, inventory))
    if tier.event.status == EventStatus.ENDED:
        raise InvalidTransition("The tiers of an ended event cannot be changed.")
    if TicketTier.objects.filter(event_id=tier.event_id, name=name).exclude(pk=tier.pk).exists():
        raise InvalidInput("A tier with this name exists.", details={"name": name})
    tier.name, tier.price, tier.inventory, tier.sort_order = name, price, inventory, sort_order
    tier.save(update_fields=["name", "price", "inventory", "sort_order"])
    tier_provision_tickets(tier=tier)
    _inventory_changed(tier.event)
    return tier


def _inventory_changed(event: Event) -> None:
    """More tickets take a SOLD_OUT event back on sale; none left marks it
    SOLD_OUT (both are no-ops in any other case)."""
    if event.status == EventStatus.SOLD_OUT:
        event_mark_available(event_id=event.pk)
    elif event.status == EventStatus.ACTIVE:
        event_mark_sold_out(event_id=event.pk)


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
    errors = _event_errors(
        name=name,
        sale_start=sale_start,
        sale_end=sale_end,
        prequeue_opens_at=prequeue_opens_at,
        max_tickets_per_customer=max_tickets_per_customer,
        admission_batch_size=admission_batch_size,
        admission_window_seconds=admission_window_seconds,
        max_active_admitted=max_active_admitted,
    )
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


def _event_errors(
    *,
    name: str,
    sale_start: datetime,
    sale_end: datetime,
    prequeue_opens_at: datetime | None,
    max_tickets_per_customer: int,
    admission_batch_size: int,
    admission_window_seconds: int,
    max_active_admitted: int,
) -> dict[str, str]:
    errors = sale_window_errors(
        sale_start=sale_start, sale_end=sale_end, prequeue_opens_at=prequeue_opens_at
    )
    if max_tickets_per_customer < 1:
        errors["max_tickets_per_customer"] = "Must be at least 1."
    if admission_batch_size < 1 or max_active_admitted < 1 or admission_window_seconds < 1:
        errors["admission"] = "Admission settings must be positive."
    if not name.strip():
        errors["name"] = "An event needs a name."
    return errors


# What an organizer may edit after creation; status moves only through the
# transition services below.
EVENT_EDITABLE_FIELDS = frozenset(
    {
        "organizer",
        "name",
        "description",
        "venue",
        "starts_at",
        "currency",
        "sale_start",
        "sale_end",
        "prequeue_opens_at",
        "max_tickets_per_customer",
        "admission_batch_size",
        "admission_window_seconds",
        "max_active_admitted",
    }
)


@transaction.atomic
def event_update(*, event_id: object, **changes: object) -> Event:
    """Edit an event's details. The sale window is validated as on creation;
    an ended event is frozen; the currency is fixed once sales opened."""
    unknown = sorted(set(changes) - EVENT_EDITABLE_FIELDS)
    if unknown:
        raise InvalidInput("These fields cannot be changed.", details={"fields": unknown})
    event = Event.objects.select_for_update().filter(pk=event_id).first()
    if event is None:
        raise NotFound("No such event.", code="event_not_found")
    if event.status == EventStatus.ENDED:
        raise InvalidTransition("An ended event cannot be changed.")
    if "currency" in changes:
        changes["currency"] = str(changes["currency"]).upper()
        if changes["currency"] != event.currency and event.status != EventStatus.DRAFT:
            raise InvalidTransition("The currency is fixed once the event went on sale.")
    for field, value in changes.items():
        setattr(event, field, value)
    errors = _event_errors(
        name=event.name,
        sale_start=event.sale_start,
        sale_end=event.sale_end,
        prequeue_opens_at=event.prequeue_opens_at,
        max_tickets_per_customer=event.max_tickets_per_customer,
        admission_batch_size=event.admission_batch_size,
        admission_window_seconds=event.admission_window_seconds,
        max_active_admitted=event.max_active_admitted,
    )
    if errors:
        raise InvalidInput("The event is not valid.", details=errors)
    # update_fields never includes status: transitions stay conditional updates.
    event.save(update_fields=[*changes, "updated_at"])
    return event


def _transition(
    event_id: object, target: EventStatus, *, sources: list[str] | None = None
) -> Event:
    """Conditional update: only from a state that may move to ``target``
    (narrowed by ``sources`` when one action covers only some of them).
    Zero rows means the event changed under us or the move is illegal."""
    if sources is None:
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
    # Only a draft is activated: PAUSED -> ACTIVE is a resume (with its
    # broadcast), SOLD_OUT -> ACTIVE only when tickets came back.
    event = _transition(event_id, EventStatus.ACTIVE, sources=[EventStatus.DRAFT])
    # robust: the status change is committed; a Redis hiccup here must not turn
    # it into an error (a missing counter is rebuilt from Postgres on demand).
    transaction.on_commit(lambda: inventory_sync_event(event_id=event.pk), robust=True)
    return event


@transaction.atomic
def event_pause(*, event_id: object) -> Event:
    event = _transition(event_id, EventStatus.PAUSED)
    _broadcast(event, "paused")
    return event


@transaction.atomic
def event_resume(*, event_id: object) -> Event:
    event = _transition(event_id, EventStatus.ACTIVE, sources=[EventStatus.PAUSED])
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

    # robust: the event is ENDED once this commits; a failing close is logged
    # and left to the queue reconciliation rather than reported as a failed end.
    transaction.on_commit(close_queue, robust=True)
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
