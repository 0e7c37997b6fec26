"""Pure rules of a payment (no Django).

INITIALIZING -> PENDING -> CONFIRMED is the happy path; INITIALIZING/PENDING
-> FAILED when the gateway refuses or the customer declines. A success the
gateway reports for a payment we could not honour (its claim was released and
the tickets are gone, or the claim was paid by another payment) becomes
REFUND_REQUIRED, which staff settle (REFUNDED). A late success for a payment
we had failed re-instates it (FAILED -> CONFIRMED) when the claim can be
re-instated: nobody pays and gets nothing (invariant 5).
"""

from __future__ import annotations

from enum import StrEnum

from fairqueue.states import StateMachine, choices


class PaymentStatus(StrEnum):
    INITIALIZING = "INITIALIZING"  # row written, gateway not (known to be) called yet
    PENDING = "PENDING"  # gateway has the transaction; waiting for the customer
    CONFIRMED = "CONFIRMED"
    FAILED = "FAILED"
    REFUND_REQUIRED = "REFUND_REQUIRED"
    REFUNDED = "REFUNDED"


# The field's choices (labels included): the model and the OpenAPI enum name
# (SPECTACULAR_SETTINGS' ENUM_NAME_OVERRIDES) use this one list.
PAYMENT_STATUS_CHOICES = choices(PaymentStatus)


P = PaymentStatus
PAYMENT_MACHINE = StateMachine(
    "payment",
    {
        # A success webhook may overtake our own INITIALIZING -> PENDING write.
        P.INITIALIZING: {P.PENDING, P.CONFIRMED, P.FAILED, P.REFUND_REQUIRED},
        P.PENDING: {P.CONFIRMED, P.FAILED, P.REFUND_REQUIRED},
        # Late success after we gave up on the payment (invariant 5).
        P.FAILED: {P.CONFIRMED, P.REFUND_REQUIRED},
        P.REFUND_REQUIRED: {P.REFUNDED},
    },
)

# At most one of these per claim (a partial unique index).
LIVE_STATUSES = (P.INITIALIZING, P.PENDING)
# The gateway took (or may have taken) the money and we have not given it back.
MONEY_TAKEN_STATUSES = (P.CONFIRMED, P.REFUND_REQUIRED)


class VerifyOutcome(StrEnum):
    """What a gateway status means for us."""

    SUCCESS = "success"
    FAILED = "failed"  # final: the charge failed
    ABANDONED = "abandoned"  # not paid (yet); final only once the claim has expired
    IN_PROGRESS = "in_progress"  # ongoing / pending / processing / queued / unknown


_GATEWAY_STATUS = {
    "success": VerifyOutcome.SUCCESS,
    "failed": VerifyOutcome.FAILED,
    "reversed": VerifyOutcome.FAILED,
    "abandoned": VerifyOutcome.ABANDONED,
}


def verify_outcome(gateway_status: str | None) -> VerifyOutcome:
    return _GATEWAY_STATUS.get((gateway_status or "").lower(), VerifyOutcome.IN_PROGRESS)


def mismatch_reason(
    *, expected_amount: int, expected_currency: str, paid_amount: object, paid_currency: object
) -> str:
    """Empty when the gateway's amount and currency match the payment; else
    a short reason to flag the payment with (invariant 7)."""
    problems = []
    if not isinstance(paid_amount, int) or isinstance(paid_amount, bool):
        problems.append(f"amount {paid_amount!r} is not an integer")
    elif paid_amount != expected_amount:
        problems.append(f"amount {paid_amount} != expected {expected_amount}")
    if not isinstance(paid_currency, str) or paid_currency.upper() != expected_currency.upper():
        problems.append(f"currency {paid_currency!r} != expected {expected_currency!r}")
    return "; ".join(problems)


def backoff_seconds(*, base: int, checks: int, cap: int = 3600) -> int:
    """How long to wait before looking at a payment again after ``checks``
    inconclusive looks: base, 2 x base, 4 x base, ... capped."""
    factor: int = 2 ** min(max(checks, 0), 16)
    return min(cap, base * factor)


class EventKind(StrEnum):
    """Kinds of rows in the append-only payment event log."""

    INITIALIZE_REQUESTED = "initialize_requested"
    INITIALIZE_ANSWER = "initialize_answer"
    INITIALIZE_ERROR = "initialize_error"
    VERIFY_REQUESTED = "verify_requested"
    VERIFY_RESULT = "verify_result"
    VERIFY_ERROR = "verify_error"
    WEBHOOK_RECEIVED = "webhook_received"
    WEBHOOK_DUPLICATE = "webhook_duplicate"  # a delivery already processed: logged, no effect
    STATE_CHANGE = "state_change"
    FLAGGED = "flagged"
    STAFF_ACTION = "staff_action"
