"""Writes of ticket tiers; their ticket rows follow through inventory."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from events.domain import MAX_TIER_INVENTORY, EventStatus
from events.models import Event, TicketTier, TierKind
from events.services.sale_status import event_mark_available, event_mark_sold_out
from fairqueue.errors import ErrorCode, InvalidInput, InvalidTransition, NotFound
from fairqueue.locks import tier_row_lock
from inventory.seating.domain import grid
from inventory.seating.services import seats_replace
from inventory.services import inventory_sync_event, tickets_provision


@dataclass(frozen=True)
class TierSpec:
    name: str
    price: int
    inventory: int
    # A reserved tier generated as a grid: (rows, seats per row); its
    # inventory is rows x seats per row.
    seat_grid: tuple[int, int] | None = None

    @classmethod
    def reserved(cls, *, name: str, price: int, rows: int, seats_per_row: int) -> TierSpec:
        return cls(name, price, rows * seats_per_row, seat_grid=(rows, seats_per_row))


def tier_spec_validate(spec: TierSpec) -> None:
    errors = {}
    if not spec.name.strip():
        errors["name"] = "A tier needs a name."
    if spec.price <= 0:
        errors["price"] = "The price must be positive (in minor units)."
    if spec.inventory <= 0:
        errors["inventory"] = "The inventory must be positive."
    elif spec.inventory > MAX_TIER_INVENTORY:
        errors["inventory"] = f"At most {MAX_TIER_INVENTORY:,} tickets per tier."
    if spec.seat_grid is not None:
        rows, per_row = spec.seat_grid
        if not 1 <= rows <= MAX_ROWS or not 1 <= per_row <= MAX_SEATS_PER_ROW:
            errors["seats"] = (
                f"A seat grid has 1 to {MAX_ROWS} rows of 1 to {MAX_SEATS_PER_ROW} seats."
            )
    if errors:
        raise InvalidInput("The tier is not valid.", details={"tier": spec.name, **errors})


MAX_ROWS = 702  # A..ZZ
MAX_SEATS_PER_ROW = 1000


def tier_provision_tickets(*, tier: TicketTier) -> None:
    """Make the ticket rows match the tier's inventory. Only free tickets can
    be removed; an inventory below what is already held is refused. A
    reserved tier's rows are its seats: they follow its seat map
    (``events.services.seating``), not the inventory."""
    if tier.kind == TierKind.RESERVED:
        return
    with transaction.atomic():
        # Two saves of one tier must not both count N rows and both add the
        # difference (more Ticket rows than inventory = oversell): one at a time.
        tier_row_lock(TicketTier.objects.filter(pk=tier.pk).values_list("pk"))
        tickets_provision(tier_id=tier.pk, inventory=tier.inventory)
    if tier.event.status != EventStatus.DRAFT:
        transaction.on_commit(lambda: inventory_sync_event(event_id=tier.event_id), robust=True)


@transaction.atomic
def tier_create(
    *,
    event: Event,
    name: str,
    price: int,
    inventory: int,
    sort_order: int = 0,
    seat_grid: tuple[int, int] | None = None,
) -> TicketTier:
    """A tier; with ``seat_grid`` (rows, seats per row) a reserved tier whose
    seats are generated (``A-1`` ...) and whose inventory is their number."""
    if seat_grid is not None:
        inventory = seat_grid[0] * seat_grid[1]
    tier_spec_validate(TierSpec(name, price, inventory, seat_grid=seat_grid))
    if event.status == EventStatus.ENDED:
        raise InvalidTransition("Tiers cannot be added to an ended event.")
    try:
        # The unique (event, name) constraint decides between concurrent adds.
        with transaction.atomic():
            tier = TicketTier.objects.create(
                event=event,
                name=name,
                price=price,
                inventory=inventory,
                sort_order=sort_order,
                kind=TierKind.GENERAL if seat_grid is None else TierKind.RESERVED,
            )
    except IntegrityError as exc:
        raise InvalidInput("A tier with this name exists.", details={"name": name}) from exc
    if seat_grid is None:
        tier_provision_tickets(tier=tier)
    else:
        seats_replace(tier_id=tier.pk, seats=grid(rows=seat_grid[0], seats_per_row=seat_grid[1]))
        if event.status != EventStatus.DRAFT:
            transaction.on_commit(lambda: inventory_sync_event(event_id=event.pk), robust=True)
    _inventory_changed(event)
    return tier


@transaction.atomic
def tier_update(
    *, tier_id: uuid.UUID | str, name: str, price: int, inventory: int, sort_order: int = 0
) -> TicketTier:
    """Change a tier; its ticket rows follow the new inventory (never below
    the tickets already held)."""
    tier = tier_row_lock(
        TicketTier.objects.select_related("event").filter(pk=tier_id), with_event=True
    )
    if tier is None:
        raise NotFound("No such tier.", code=ErrorCode.TIER_NOT_FOUND)
    if tier.kind == TierKind.RESERVED and inventory != tier.inventory:
        raise InvalidInput(
            "A reserved tier's inventory is its number of seats: change its seat map instead.",
            details={"inventory": tier.inventory},
        )
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
