"""Pure rules of a claim on tickets (no Django)."""

from __future__ import annotations

from enum import StrEnum

from fairqueue.states import StateMachine, choices


class ClaimStatus(StrEnum):
    CLAIMED = "CLAIMED"
    CONFIRMED = "CONFIRMED"
    RELEASED = "RELEASED"


# The field's choices (labels included): the model and the OpenAPI enum name
# (SPECTACULAR_SETTINGS' ENUM_NAME_OVERRIDES) use this one list.
CLAIM_STATUS_CHOICES = choices(ClaimStatus)


C = ClaimStatus
CLAIM_MACHINE = StateMachine(
    "claim",
    {
        C.CLAIMED: {C.CONFIRMED, C.RELEASED},
        # A paid purchase is cancelled when its money goes back (a refund, or
        # a chargeback staff accept): its tickets return to sale.
        C.CONFIRMED: {C.RELEASED},
        # A late payment success for a released claim re-instates it when the
        # tickets are still free (invariant 5).
        C.RELEASED: {C.CONFIRMED},
    },
)

# The releases a customer, expiry, a failed payment or staff make: only an
# unpaid claim. A paid one leaves CONFIRMED only when its money goes back
# (``ReleaseReason.REFUNDED``, claims.services.claim_release_paid).
UNPAID_RELEASE_SOURCES = (C.CLAIMED,)

# Claims that hold tickets (invariant 3) and count as the customer's purchase
# for the event (invariant 6).
HOLDING_STATUSES = (C.CLAIMED, C.CONFIRMED)


class ReleaseReason(StrEnum):
    CUSTOMER = "customer"
    EXPIRED = "expired"
    PAYMENT_FAILED = "payment_failed"
    STAFF = "staff"
    REFUNDED = "refunded"  # a paid claim whose money went back to the customer
