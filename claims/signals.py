"""News from the claims app for the apps above it."""

from django.dispatch import Signal

# A claim became CONFIRMED and its tickets were issued (sent after commit).
# Arguments: claim_id.
claim_confirmed = Signal()

# A paid claim was cancelled (refunded, or by staff) and its issued tickets
# voided (sent after commit). Arguments: claim_id, reason (a ReleaseReason).
claim_cancelled = Signal()
