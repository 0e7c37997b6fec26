"""News from the events app to the apps above it (they connect receivers in
their AppConfig.ready; events imports none of them)."""

from django.dispatch import Signal

# The sale of an event ended (the organizer ended it, or its sale window
# closed): sent after the ENDED status committed, with ``event_id``.
sale_ended = Signal()
