"""Writes for events and tiers, the only place that changes them.

- ``lifecycle``: create and edit events, and their status transitions;
- ``tiers``: ticket tiers (their ticket rows follow through inventory);
- ``seatmaps``: a reserved tier's seats (generated, imported, blocked);
- ``sale_status``: SOLD_OUT and back, following the tickets; the periodic
  inventory reconciliation.
"""

from events.services.lifecycle import (
    EVENT_EDITABLE_FIELDS,
    default_sale_window,
    event_activate,
    event_create,
    event_end,
    event_pause,
    event_resume,
    event_update,
    events_end_due,
)
from events.services.sale_status import (
    event_mark_available,
    event_mark_sold_out,
    inventory_reconcile,
)
from events.services.seating import (
    seat_map_generate,
    seat_map_import_csv,
    seat_map_replace,
    seats_block,
)
from events.services.tiers import TierSpec, tier_create, tier_provision_tickets, tier_update

__all__ = [
    "EVENT_EDITABLE_FIELDS",
    "TierSpec",
    "default_sale_window",
    "event_activate",
    "event_create",
    "event_end",
    "event_mark_available",
    "event_mark_sold_out",
    "event_pause",
    "event_resume",
    "event_update",
    "events_end_due",
    "inventory_reconcile",
    "seat_map_generate",
    "seat_map_import_csv",
    "seat_map_replace",
    "seats_block",
    "tier_create",
    "tier_provision_tickets",
    "tier_update",
]
