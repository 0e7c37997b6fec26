"""News from queueing to the apps above it (they connect receivers in their
AppConfig.ready; queueing imports none of them)."""

from django.dispatch import Signal

# A waiting-list entry was offered a ticket, sent after the offer committed,
# with ``entry_id``, ``event_id``, ``customer_id`` and ``expires_at`` (when
# the offer's admission window closes). The storefront emails the customer.
waitlist_offered = Signal()
