"""Pure rules of a payment (no Django). docs/PAYMENTS.md draws them.

INITIALIZING -> PENDING -> CONFIRMED is the happy path; INITIALIZING/PENDING
-> FAILED when the gateway says the charge failed or was abandoned. A late
success for a payment we had failed re-instates it (FAILED -> CONFIRMED) when
the claim can be re-instated: nobody pays and gets nothing (invariant 5).

Money the gateway took that no ticket keeps becomes REFUND_REQUIRED, from
INITIALIZING, PENDING or FAILED alike: a success for a claim released whose
tickets are gone, or for a claim another payment has paid; a success of the
wrong amount or currency, whatever the payment's and the claim's state (it is
flagged and never confirms or re-instates a claim, invariant 7); and a refund
the gateway reports for a payment whose success had not reached us (the
gateway refunds only a charge that succeeded).

Money goes back through the gateway's Refund API: REFUND_REQUIRED (and a
CONFIRMED payment staff refund, whose tickets then return to sale) ->
REFUND_PENDING -> REFUNDED, or REFUND_FAILED for staff to retry or settle by
hand. Money that went back outside our Refund API calls (a refund made in the
gateway's dashboard, a chargeback staff accept) moves the payment straight to
REFUNDED. Disputes and reversals are not states: they are a flag
(``DisputeState``) on a payment whose money the customer's bank is taking
back, for staff to decide on.
"""

from __future__ import annotations

from enum import StrEnum

from fairqueue.states import StateMachine, choices


class PaymentStatus(StrEnum):
    INITIALIZING = "INITIALIZING"  # row written, gateway not (known to be) called yet
    PENDING = "PENDING"  # gateway has the transaction; waiting for the customer
    CONFIRMED = "CONFIRMED"
    FAILED = "FAILED"
    REFUND_REQUIRED = "REFUND_REQUIRED"  # paid, but no tickets for it: money must go back
    REFUND_PENDING = "REFUND_PENDING"  # a refund is with the gateway
    REFUNDED = "REFUNDED"
    REFUND_FAILED = "REFUND_FAILED"  # the gateway could not refund: staff retry or settle


# The field's choices (labels included): the model and the OpenAPI enum name
# (SPECTACULAR_SETTINGS' ENUM_NAME_OVERRIDES) use this one list.
PAYMENT_STATUS_CHOICES = choices(PaymentStatus)


P = PaymentStatus
PAYMENT_MACHINE = StateMachine(
    "payment",
    {
        # A success webhook may overtake our own INITIALIZING -> PENDING write.
        # REFUND_REQUIRED: money taken that no ticket keeps (see above).
        P.INITIALIZING: {P.PENDING, P.CONFIRMED, P.FAILED, P.REFUND_REQUIRED},
        P.PENDING: {P.CONFIRMED, P.FAILED, P.REFUND_REQUIRED},
        # Late success after we gave up on the payment (invariant 5).
        P.FAILED: {P.CONFIRMED, P.REFUND_REQUIRED},
        # A refund started (the purchase is cancelled), or money that went
        # back outside our refund calls (dashboard refund, accepted chargeback).
        P.CONFIRMED: {P.REFUND_PENDING, P.REFUNDED},
        P.REFUND_REQUIRED: {P.REFUND_PENDING, P.REFUNDED},
        P.REFUND_PENDING: {P.REFUNDED, P.REFUND_FAILED},
        P.REFUND_FAILED: {P.REFUND_PENDING, P.REFUNDED},
    },
)

# At most one of these per claim (a partial unique index).
LIVE_STATUSES = (P.INITIALIZING, P.PENDING)
# No money taken, as far as we know: the gateway has not reported a success.
UNPAID_STATUSES = (*LIVE_STATUSES, P.FAILED)
# The gateway took the money and it has not (all) come back yet.
MONEY_TAKEN_STATUSES = (P.CONFIRMED, P.REFUND_REQUIRED, P.REFUND_PENDING, P.REFUND_FAILED)
# The moves that say the gateway took an unpaid payment's money: its charge
# enters the purchase's account with them.
TAKEN_ON_ARRIVAL = (P.CONFIRMED, P.REFUND_REQUIRED)
# The gateway took the money and the payment kept it (some of it may be back
# by now): a resale's refund may be paid from these.
PAID_STATUSES = (P.CONFIRMED, P.REFUND_PENDING, P.REFUNDED, P.REFUND_FAILED)
# A refund may be started from these (staff, or automatically for REFUND_REQUIRED).
REFUNDABLE_STATUSES = (P.CONFIRMED, P.REFUND_REQUIRED, P.REFUND_FAILED)
# Settled for good as far as a charge.success is concerned: a repeat changes nothing.
SETTLED_STATUSES = (P.CONFIRMED, *REFUNDABLE_STATUSES, P.REFUND_PENDING, P.REFUNDED)


class VerifyOutcome(StrEnum):
    """What a gateway status means for us."""

    SUCCESS = "success"
    FAILED = "failed"  # final: the charge failed
    ABANDONED = "abandoned"  # not paid (yet); final only once the claim has expired
    REVERSED = "reversed"  # the money went back to the customer (refund or chargeback)
    IN_PROGRESS = "in_progress"  # ongoing / pending / processing / queued / unknown


_GATEWAY_STATUS = {
    "success": VerifyOutcome.SUCCESS,
    "failed": VerifyOutcome.FAILED,
    "reversed": VerifyOutcome.REVERSED,
    "abandoned": VerifyOutcome.ABANDONED,
}
# The gateway's non-final statuses (Paystack: ongoing, pending, processing,
# queued): the customer may still pay. They may hold tickets past the claim's
# expiry only up to PAYMENT_IN_PROGRESS_MAX_SECONDS (see payments.services.reconcile).
IN_PROGRESS_GATEWAY_STATUSES = ("ongoing", "pending", "processing", "queued")


def verify_outcome(gateway_status: str | None) -> VerifyOutcome:
    return _GATEWAY_STATUS.get((gateway_status or "").lower(), VerifyOutcome.IN_PROGRESS)


class RefundStatus(StrEnum):
    REQUESTED = "REQUESTED"  # row written, the gateway not (known to be) asked yet
    PENDING = "PENDING"  # the gateway accepted it (pending / processing)
    PROCESSED = "PROCESSED"
    FAILED = "FAILED"


OPEN_REFUND_STATUSES = (RefundStatus.REQUESTED, RefundStatus.PENDING)

_REFUND_GATEWAY_STATUS = {
    "pending": RefundStatus.PENDING,
    "processing": RefundStatus.PENDING,
    "needs-attention": RefundStatus.PENDING,
    "processed": RefundStatus.PROCESSED,
    "failed": RefundStatus.FAILED,
}


def refund_status_of(gateway_status: str | None) -> RefundStatus:
    """A refund's status as the gateway names it (Paystack: pending,
    processing, processed, failed); anything else is still pending."""
    return _REFUND_GATEWAY_STATUS.get((gateway_status or "").lower(), RefundStatus.PENDING)


def refund_amount_error(*, requested: int | None, refundable: int) -> str:
    """Empty when ``requested`` (None = all that is left) may be refunded."""
    if refundable <= 0:
        return "nothing is left to refund"
    if requested is None:
        return ""
    if isinstance(requested, bool) or not isinstance(requested, int) or requested <= 0:
        return "the amount must be a positive whole number of minor units"
    if requested > refundable:
        return f"at most {refundable} (minor units) is left to refund"
    return ""


class DisputeState(StrEnum):
    """The flag on a payment whose money the customer's bank is taking back."""

    OPEN = "open"  # charge.dispute.create / remind: the bank asks us
    LOST = "lost"  # resolved for the customer (merchant-accepted): the money went back
    WON = "won"  # resolved for us (declined): nothing to do
    REVERSED = "reversed"  # verify answered "reversed" for a paid payment
    CLOSED = "closed"  # staff decided (kept the tickets, or refunded)


# What the "disputed" filter shows: staff have a decision to make.
DISPUTE_NEEDS_STAFF = (DisputeState.OPEN, DisputeState.LOST, DisputeState.REVERSED)


def dispute_state_of(*, event: str, resolution: str | None) -> DisputeState:
    """charge.dispute.create / remind keep it open; resolve ends it for us
    ("declined": the bank ruled for the merchant) or for the customer."""
    if not event.endswith(".resolve"):
        return DisputeState.OPEN
    if (resolution or "").lower() == "declined":
        return DisputeState.WON
    return DisputeState.LOST


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
    MERCHANT_ERROR = "merchant_error"  # the gateway refused our account or our request
    VERIFY_REQUESTED = "verify_requested"
    VERIFY_RESULT = "verify_result"
    VERIFY_ERROR = "verify_error"
    WEBHOOK_RECEIVED = "webhook_received"
    WEBHOOK_DUPLICATE = "webhook_duplicate"  # a delivery already processed: logged, no effect
    STATE_CHANGE = "state_change"
    FLAGGED = "flagged"
    OVERDUE = "overdue"  # a non-final gateway status outlived its bound: claim released
    REFUND_REQUESTED = "refund_requested"
    REFUND_ANSWER = "refund_answer"
    REFUND_ERROR = "refund_error"
    REFUND_UPDATE = "refund_update"  # a refund's status moved (webhook or a look-up)
    DISPUTE = "dispute"  # a dispute or reversal changed the payment's flag
    STAFF_ACTION = "staff_action"
