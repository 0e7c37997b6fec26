"""Writes for events and tiers. The only place that changes them."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from events.domain import (
    CHOOSE_SECONDS_DEFAULT,
    EVENT_MACHINE,
    LIVE_STATUSES,
    EventStatus,
    sale_window_errors,
)
from events.models import Event, Organizer
from events.services.tiers import TierSpec, tier_create, tier_spec_validate
from events.signals import sale_ended
from fairqueue.broadcast import event_group, push_after_commit
from fairqueue.errors import Busy, ErrorCode, InvalidInput, InvalidTransition, NotFound
from fairqueue.locks import event_row_lock
from fairqueue.money import GATEWAY_CURRENCIES
from fairqueue.news import send_on_commit
from inventory.services import inventory_sync_event

logger = logging.getLogger(__name__)


def _unique_slug(name: str) -> str:
    base = slugify(name)[:200] or "event"
    slug, n = base, 1
    while Event.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


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
    admission_window_seconds: int = CHOOSE_SECONDS_DEFAULT,
    max_active_admitted: int = 5000,
    admit_ahead: bool = False,
    **resale: Any,
) -> Event:
    """A DRAFT event with its tiers. ``resale``: the return and transfer
    settings (``RESALE_FIELDS``), all off unless given."""
    unknown = set(resale) - RESALE_FIELDS
    if unknown:
        raise TypeError(f"event_create got unknown fields {sorted(unknown)}")
    errors = _event_errors(
        name=name,
        currency=currency,
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
        tier_spec_validate(spec)
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
        admit_ahead=admit_ahead,
        **resale,
    )
    for order, spec in enumerate(tiers):
        tier_create(
            event=event,
            name=spec.name,
            price=spec.price,
            inventory=spec.inventory,
            sort_order=order,
            seat_grid=spec.seat_grid,
        )
    return event


def _event_errors(
    *,
    name: str,
    currency: str,
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
    if str(currency).upper() not in GATEWAY_CURRENCIES:
        errors["currency"] = (
            f"The payment gateway does not take {currency!r}; use one of "
            f"{', '.join(sorted(GATEWAY_CURRENCIES))}."
        )
    return errors


# Returns and transfers (docs/RESALE.md): the organizer's settings.
RESALE_FIELDS = frozenset(
    {"returns_until", "return_fee", "transfers_allowed", "transfer_limit", "holder_shown"}
)

# What an organizer may edit after creation; status moves only through the
# transition services below.
EVENT_EDITABLE_FIELDS = RESALE_FIELDS | frozenset(
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
        "admit_ahead",
    }
)


@transaction.atomic
def event_update(*, event_id: uuid.UUID | str, **changes: object) -> Event:
    """Edit an event's details. The sale window is validated as on creation;
    an ended event is frozen; the currency is fixed once sales opened."""
    unknown = sorted(set(changes) - EVENT_EDITABLE_FIELDS)
    if unknown:
        raise InvalidInput("These fields cannot be changed.", details={"fields": unknown})
    event = event_row_lock(Event.objects.filter(pk=event_id))
    if event is None:
        raise NotFound("No such event.", code=ErrorCode.EVENT_NOT_FOUND)
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
        currency=event.currency,
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
    event_id: uuid.UUID | str, target: EventStatus, *, sources: list[str] | None = None
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
def event_activate(*, event_id: uuid.UUID | str) -> Event:
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
def event_pause(*, event_id: uuid.UUID | str) -> Event:
    event = _transition(event_id, EventStatus.PAUSED)
    _broadcast(event, "paused")
    return event


@transaction.atomic
def event_resume(*, event_id: uuid.UUID | str) -> Event:
    event = _transition(event_id, EventStatus.ACTIVE, sources=[EventStatus.PAUSED])
    _broadcast(event, "resumed")
    return event


@transaction.atomic
def event_end(*, event_id: uuid.UUID | str) -> Event:
    # FOR UPDATE, not the transition's FOR NO KEY UPDATE: it waits for the
    # joins in flight, whose INSERT holds the row FOR KEY SHARE while it
    # checks that the event is live. Each of them either committed before
    # this (its entry is expired with the rest of the line) or reads the
    # event again after this commits and inserts nothing.
    event_row_lock(Event.objects.filter(pk=event_id).values_list("pk"))
    event = _transition(event_id, EventStatus.ENDED)
    _broadcast(event, "ended")

    # Everyone still waiting or admitted is expired: queueing owns that and
    # listens for sale_ended. The event is ENDED once this commits; a failing
    # receiver is logged and left to the queue reconciliation rather than
    # reported as a failed end.
    send_on_commit(sale_ended, sender=Event, event_id=event.pk)
    return event


def events_end_due(*, now: datetime | None = None) -> list[str]:
    """Every live event whose ``sale_end`` has passed is ended through
    ``event_end`` (so ``sale_ended`` goes out: queueing expires the line and
    tells everyone). The beat runs it (``events.tasks.sales_end``). Returns
    the ids this call ended."""
    now = now or timezone.now()
    due = Event.objects.filter(status__in=LIVE_STATUSES, sale_end__lte=now).values_list(
        "id", flat=True
    )
    ended: list[str] = []
    for event_id in due:
        try:
            event_end(event_id=event_id)
        except InvalidTransition:
            continue  # ended by the organizer meanwhile
        except Busy:
            # Its row stayed locked past the lock timeout (an admin edit, a
            # long tick): the next run, one admission interval later, ends it.
            logger.info("sale window closed: event %s busy, ended on the next run", event_id)
            continue
        ended.append(str(event_id))
        logger.info("sale window closed: event %s ended", event_id)
    return ended


def default_sale_window(now: datetime | None = None) -> tuple[datetime, datetime]:
    now = now or timezone.now()
    return now, now + timedelta(days=30)
