"""Writes of ticket tiers; their ticket rows follow through inventory."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from events.domain import EventStatus
from events.models import Event, TicketTier
from events.services.sale_status import event_mark_available, event_mark_sold_out
from fairqueue.errors import ErrorCode, InvalidInput, InvalidTransition, NotFound
from inventory.services import inventory_sync_event, tickets_provision


@dataclass(frozen=True)
class TierSpec:
    name: str
    price: int
    inventory: int


def tier_spec_validate(spec: TierSpec) -> None:
    errors = {}
    if not spec.name.strip():
        errors["name"] = "A tier needs a name."
    if spec.price <= 0:
        errors["price"] = "The price must be positive (in minor units)."
    if spec.inventory <= 0:
        errors["inventory"] = "The inventory must be positive."
    if errors:
        raise InvalidInput("The tier is not valid.", details={"tier": spec.name, **errors})


def tier_provision_tickets(*, tier: TicketTier) -> None:
    """Make the ticket rows match the tier's inventory. Only free tickets can
    be removed; an inventory below what is already held is refused."""
    with transaction.atomic():
        # Two saves of one tier must not both count N rows and both add the
        # difference (more Ticket rows than inventory = oversell): one at a time.
        TicketTier.objects.select_for_update().filter(pk=tier.pk).values_list("pk").first()
        tickets_provision(tier_id=tier.pk, inventory=tier.inventory)
    if tier.event.status != EventStatus.DRAFT:
        transaction.on_commit(lambda: inventory_sync_event(event_id=tier.event_id), robust=True)


@transaction.atomic
def tier_create(
    *, event: Event, name: str, price: int, inventory: int, sort_order: int = 0
) -> TicketTier:
    tier_spec_validate(TierSpec(name, price, inventory))
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
    *, tier_id: uuid.UUID | str, name: str, price: int, inventory: int, sort_order: int = 0
) -> TicketTier:
    """Change a tier; its ticket rows follow the new inventory (never below
    the tickets already held)."""
    tier = TicketTier.objects.select_for_update().select_related("event").filter(pk=tier_id).first()
    if tier is None:
        raise NotFound("No such tier.", code=ErrorCode.TIER_NOT_FOUND)
    tier_spec_validate(TierSpec(name, price, inventory))
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
