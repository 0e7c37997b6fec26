"""News from inventory to the apps above it (they connect receivers in their
AppConfig.ready; inventory imports none of them)."""

from django.dispatch import Signal

# Seats of a reserved tier changed status, sent after the change committed,
# with ``event_id``, ``tier_id``, ``changes`` (a list of
# ``{"label": "A-1", "status": "held"}``, status one of available, held,
# sold, blocked) and ``version`` (the seat map's version after the change,
# None when Redis could not be asked).
seats_changed = Signal()

# Tickets of a tier became free to sell again (a claim released or expired, a
# payment failed or refunded, a ticket returned for resale), sent after the
# change committed, with ``event_id``, ``tier_id`` and ``quantity``. The
# waiting list turns them into offers once the event is sold out.
tickets_freed = Signal()
