"""Writes of a reserved tier's seat map, for organizers: generate a grid,
import a CSV, block and unblock seats. The seats themselves are ticket rows
(``inventory.seating``); the tier's inventory follows their number."""

from __future__ import annotations

import csv
import io
import uuid
from collections.abc import Sequence

from django.db import transaction

from events.domain import EventStatus
from events.models import TicketTier, TierKind
from events.services.sale_status import event_mark_available, event_mark_sold_out
from fairqueue.errors import ErrorCode, InvalidInput, InvalidTransition, NotFound
from fairqueue.locks import tier_row_lock
from inventory.seating.domain import Seat, SeatChange, SeatStatus, grid_rows, parse_seat_rows
from inventory.seating.seatmap import seat_map_changed, seats_changed_on_commit
from inventory.seating.services import seats_replace, seats_set_blocked
from inventory.services import inventory_sync_event

MAX_SEATS = 50_000
MAX_CSV_BYTES = 4_000_000


@transaction.atomic
def seat_map_generate(
    *,
    tier_id: uuid.UUID | str,
    first_row: str,
    last_row: str,
    seats_per_row: int,
    section: str = "",
) -> int:
    """The tier's seat map becomes rows ``first_row``..``last_row`` of
    ``seats_per_row`` seats ("rows A-T, 30 seats each"). Returns the number
    of seats."""
    if not 1 <= seats_per_row <= 1000:
        raise InvalidInput("A row has 1 to 1000 seats.", details={"seats_per_row": seats_per_row})
    try:
        seats = grid_rows(
            first=first_row, last=last_row, seats_per_row=seats_per_row, section=section.strip()
        )
    except ValueError as exc:
        raise InvalidInput(str(exc), details={"rows": f"{first_row}-{last_row}"}) from exc
    return seat_map_replace(tier_id=tier_id, seats=seats)


@transaction.atomic
def seat_map_import_csv(*, tier_id: uuid.UUID | str, text: str) -> int:
    """The tier's seat map becomes the seats of a CSV
    (``section,row,number[,x,y,flags]``, ``inventory.seating.domain.parse_seat_rows``)."""
    if len(text.encode()) > MAX_CSV_BYTES:
        raise InvalidInput("The CSV is too large.", details={"max_bytes": MAX_CSV_BYTES})
    try:
        seats = parse_seat_rows(list(csv.reader(io.StringIO(text))))
    except (ValueError, csv.Error) as exc:
        raise InvalidInput(f"The CSV is not valid: {exc}") from exc
    return seat_map_replace(tier_id=tier_id, seats=seats)


@transaction.atomic
def seat_map_replace(*, tier_id: uuid.UUID | str, seats: Sequence[Seat]) -> int:
    """The tier becomes reserved seating with exactly these seats (its old
    ticket rows go; refused while any is held or sold, and on an ended
    event); its inventory is their number."""
    if len(seats) > MAX_SEATS:
        raise InvalidInput("Too many seats.", details={"max": MAX_SEATS})
    tier = _tier_locked(tier_id)
    if tier.event.status == EventStatus.ENDED:
        raise InvalidTransition("The seats of an ended event cannot be changed.")
    count = seats_replace(tier_id=tier.pk, seats=seats)
    tier.kind, tier.inventory = TierKind.RESERVED, count
    tier.save(update_fields=["kind", "inventory"])
    seat_map_changed(event_id=tier.event_id, tier_id=tier.pk)
    _inventory_changed(tier)
    return count


@transaction.atomic
def seats_block(
    *, tier_id: uuid.UUID | str, labels: Sequence[str], blocked: bool = True
) -> list[str]:
    """Block (house seats, broken seats) or unblock seats of a reserved
    tier. Only free seats change (a held or sold seat stays with its
    claim); returns the labels that changed."""
    tier = _tier_locked(tier_id)
    if tier.kind != TierKind.RESERVED:
        raise InvalidInput("Only reserved seating has seats to block.")
    wanted = sorted({label.strip() for label in labels if label.strip()})
    if not wanted:
        raise InvalidInput("Name at least one seat.", details={"seats": list(labels)})
    changed = seats_set_blocked(tier_id=tier.pk, labels=wanted, blocked=blocked)
    status = SeatStatus.BLOCKED if blocked else SeatStatus.AVAILABLE
    seats_changed_on_commit(
        event_id=tier.event_id,
        tier_id=tier.pk,
        changes=[SeatChange(label, status) for label in changed],
    )
    if changed:
        _inventory_changed(tier)
    return changed


def _tier_locked(tier_id: uuid.UUID | str) -> TicketTier:
    tier = tier_row_lock(TicketTier.objects.select_related("event").filter(pk=tier_id))
    if tier is None:
        raise NotFound("No such tier.", code=ErrorCode.TIER_NOT_FOUND)
    return tier


def _inventory_changed(tier: TicketTier) -> None:
    """Seats added, removed, blocked or unblocked: after commit, the Redis
    counter follows and the event leaves or enters SOLD_OUT."""
    event = tier.event
    if event.status == EventStatus.DRAFT:
        return

    def follow() -> None:
        inventory_sync_event(event_id=event.pk, tier_ids=[tier.pk])
        # Both are conditional: at most one changes anything.
        event_mark_available(event_id=event.pk)
        event_mark_sold_out(event_id=event.pk)

    transaction.on_commit(follow, robust=True)
