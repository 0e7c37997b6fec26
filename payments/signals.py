"""News from the payments app (sent after commit, fairqueue/news.py)."""

from django.dispatch import Signal

# A payment became REFUND_REQUIRED: the money must go back. Arguments: payment_id.
refund_required = Signal()
