"""Writes of the waiting room, the only place that changes queue entries.

- ``join``: joining and leaving the line; ``position``: where a customer
  stands in it (``answers``: what both tell a waiting customer);
- ``admission``: the admission tick (expiry, next batch); ``capacity``: how
  many it may admit (admitting ahead of no-shows included);
- ``expiry``: admissions whose time to choose lapsed; ``extension``: the one
  extension of it a customer may ask for;
- ``sold_out``: admitted, and nothing left: first on the waiting list;
- ``prequeue``: the pre-queue shuffle at sale start;
- ``clock``: the admission clock (windows do not run out while the waiting
  room is degraded);
- ``admission_check``: the claim step's side (the admission used up);
- ``close``: the end of a sale;
- ``rebuild`` / ``reconcile``: Redis back from Postgres;
- ``ws_tickets``: single-use tickets that open the queue WebSocket.

Submodules import each other directly, never this package, so re-exporting
them here makes no cycle.
"""

from queueing.services.admission import admission_tick_all, admission_tick_event
from queueing.services.admission_check import (
    admission_slot,
    admission_slot_release,
    queue_entry_complete,
)
from queueing.services.clock import admission_clock_stop
from queueing.services.close import queue_close
from queueing.services.expiry import admissions_expire
from queueing.services.extension import Extension, admission_extend
from queueing.services.join import (
    JoinBar,
    JoinResult,
    join_bar_set,
    queue_abandon,
    queue_join,
    queue_join_signed_in,
)
from queueing.services.position import (
    PositionResult,
    queue_position,
    queue_position_signed_in,
)
from queueing.services.prequeue import prequeue_shuffle
from queueing.services.rebuild import queue_rebuild
from queueing.services.reconcile import queue_reconcile_all, queue_reconcile_event
from queueing.services.sold_out import admissions_sold_out
from queueing.services.ws_tickets import WsTicket, ws_ticket_issue, ws_ticket_redeem

__all__ = [
    "Extension",
    "JoinBar",
    "JoinResult",
    "PositionResult",
    "WsTicket",
    "admission_clock_stop",
    "admission_extend",
    "admission_slot",
    "admission_slot_release",
    "admission_tick_all",
    "admission_tick_event",
    "admissions_expire",
    "admissions_sold_out",
    "join_bar_set",
    "prequeue_shuffle",
    "queue_abandon",
    "queue_close",
    "queue_entry_complete",
    "queue_join",
    "queue_join_signed_in",
    "queue_position",
    "queue_position_signed_in",
    "queue_rebuild",
    "queue_reconcile_all",
    "queue_reconcile_event",
    "ws_ticket_issue",
    "ws_ticket_redeem",
]
