"""News from the payments app (sent after commit, fairqueue/news.py)."""

from django.dispatch import Signal

# A payment became REFUND_REQUIRED: the money must go back. Arguments: payment_id.
refund_required = Signal()

# A refund event named no refund of ours: the transaction's refunds are to be
# listed at the gateway and matched. Arguments: payment_id.
refunds_to_look_up = Signal()
