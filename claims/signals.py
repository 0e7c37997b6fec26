"""News from the claims app for the apps above it."""

from django.dispatch import Signal

# A claim became CONFIRMED and its tickets were issued (sent after commit).
# Arguments: claim_id.
claim_confirmed = Signal()

# A paid claim was cancelled (refunded, or by staff) and its issued tickets
# voided (sent after commit). Arguments: claim_id, reason (a ReleaseReason).
claim_cancelled = Signal()

# A returned ticket was bought by someone else and its first buyer is owed
# its refund (sent after commit). Arguments: return_id.
ticket_resold = Signal()

# A holder sent a ticket to another person (sent after commit). Arguments:
# transfer_id.
ticket_transfer_offered = Signal()

# A return still on resale when the event's returns closed went back to its
# holder: the ticket is valid again (sent after commit). Arguments: return_id.
ticket_return_closed = Signal()
