"""Reserved seating: everything about seats, in one place.

A reserved tier's ticket rows are its seats (``inventory.models.Ticket`` with
a label), so the guard that refuses an oversell refuses a seat sold twice.

Here, from the pure rules up:

- ``domain``: labels, the generated grid, the CSV rows, best available
  (pure: no Django).
- ``selectors``: Postgres reads: which seats are free, every seat of a tier
  with its status.
- ``services``: the Postgres guard: seats locked in id order and taken by a
  claim, best available under contention, a tier's seats replaced or blocked.
- ``seatmap``: the seat map customers read, cached in Redis (``lua/``), and the
  news that seats changed (``inventory.signals.seats_changed``).
- ``pushes``: those changes on the event's WebSocket, batched per tier.
- ``svg``: the seat map drawn for organizers.

The interfaces live in the apps that own them, each a thin module named after
seating: ``claims.services.seating`` (a claim takes its chosen or best seats),
``events.services.seating`` (an organizer generates, imports and blocks
seats), the seat map API (``events.views.TierSeatMapView``, ``GET
events/{id}/tiers/{tier_id}/seats/``) and ``console.admin.seating`` (the seat
map in the console). The pages' picker is
``storefront/static/storefront/seats/``.
"""
