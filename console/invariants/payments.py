"""Payments, from Postgres: nobody pays and gets nothing (invariant 5), every
money movement is recorded (invariant 7)."""

from __future__ import annotations

from claims.domain import ClaimSource, ClaimStatus, ReleaseReason
from claims.models import Claim
from console.invariants.base import Found, Options, Scope, When, check, plural, rows, value
from events.models import Event
from payments.domain import LIVE_STATUSES, MONEY_TAKEN_STATUSES, EventKind, PaymentStatus
from payments.models import Payment, PaymentEvent, WebhookReceipt

CLAIM = Claim._meta.db_table
PAYMENT = Payment._meta.db_table
LOG = PaymentEvent._meta.db_table
RECEIPT = WebhookReceipt._meta.db_table
LIVE = [s.value for s in LIVE_STATUSES]
CONFIRMED = PaymentStatus.CONFIRMED.value
INITIALIZING = PaymentStatus.INITIALIZING.value
# Where a success the gateway reported may leave a payment (invariant 5):
# confirmed with its claim, or owed back to the customer (and on its way back).
SUCCESS_ENDS = [CONFIRMED, *(s.value for s in MONEY_TAKEN_STATUSES if s != CONFIRMED),
                PaymentStatus.REFUNDED.value]  # fmt: skip
STATE_CHANGE = EventKind.STATE_CHANGE.value

# Made by payments' migration 0002_paymentevent_append_only.
APPEND_ONLY_TRIGGER = "payments_paymentevent_append_only"

# The payments of one event (through their claims).
_OF_EVENT = f"FROM {PAYMENT} p JOIN {CLAIM} c ON c.id = p.claim_id WHERE c.event_id = %s"


def _count(where: str, params: list[object]) -> int:
    return int(value(f"SELECT COUNT(*) {_OF_EVENT} AND {where}", params))


@check(invariant=5)
def paid_means_confirmed(event: Event, options: Options) -> Found:
    """A CONFIRMED payment's claim is CONFIRMED; a CONFIRMED claim bought in
    the sale has exactly one CONFIRMED payment (a transferred ticket's claim
    has none: nothing was paid)."""
    paid_not_confirmed = _count(
        "p.status = %s AND c.status <> %s", [event.pk, CONFIRMED, ClaimStatus.CONFIRMED.value]
    )
    confirmed_not_paid = value(
        f"SELECT COUNT(*) FROM {CLAIM} c WHERE c.event_id = %s AND c.status = %s "  # noqa: S608
        "AND c.source = %s "
        f"AND (SELECT COUNT(*) FROM {PAYMENT} p WHERE p.claim_id = c.id AND p.status = %s) <> 1",
        [event.pk, ClaimStatus.CONFIRMED.value, ClaimSource.SALE.value, CONFIRMED],
    )
    problems = []
    if paid_not_confirmed:
        problems.append(
            f"{plural(paid_not_confirmed, 'confirmed payment')} whose claim is not CONFIRMED"
        )
    if confirmed_not_paid:
        problems.append(
            f"{plural(confirmed_not_paid, 'confirmed claim')} without exactly one confirmed payment"
        )
    paid = _count("p.status = %s", [event.pk, CONFIRMED])
    return Found(problems, f"{plural(paid, 'confirmed payment')}, each with its confirmed claim")


@check(invariant=5)
def payment_in_flight_flag(event: Event, options: Options) -> Found:
    """``Claim.payment_in_flight`` is set exactly when the claim has an
    INITIALIZING or PENDING payment (claim expiry trusts it)."""
    wrong = rows(
        f"SELECT c.payment_in_flight, COUNT(*) FROM {CLAIM} c WHERE c.event_id = %s "  # noqa: S608
        f"AND c.payment_in_flight <> EXISTS (SELECT 1 FROM {PAYMENT} p "
        "WHERE p.claim_id = c.id AND p.status = ANY(%s)) GROUP BY 1",
        [event.pk, LIVE],
    )
    by_flag = dict(wrong)
    problems = []
    if by_flag.get(True):
        claims = plural(by_flag[True], "claim")
        problems.append(f"{claims} flagged in flight without a live payment")
    if by_flag.get(False):
        problems.append(f"{plural(by_flag[False], 'claim')} with a live payment but not flagged")
    flagged = Claim.objects.filter(event_id=event.pk, payment_in_flight=True).count()
    return Found(problems, f"{plural(flagged, 'claim')} in flight, each with its live payment")


@check(invariant=5)
def no_expiry_under_payment(event: Event, options: Options) -> Found:
    """No claim expired while its payment was in flight: expiry asks the
    gateway first and releases only once the payment has failed, or once the
    payment outlived PAYMENT_IN_PROGRESS_MAX_SECONDS in a non-final status
    (marked overdue; docs/PAYMENTS.md)."""
    expired = _count(
        "c.status = %s AND c.release_reason = %s AND p.status = ANY(%s) AND p.overdue_at IS NULL",
        [event.pk, ClaimStatus.RELEASED.value, ReleaseReason.EXPIRED.value, LIVE],
    )
    problems = [f"{plural(expired, 'claim')} expired with a payment in flight"] if expired else []
    return Found(problems, "no claim expired under a live payment")


@check(invariant=5)
def late_successes_kept(event: Event, options: Options) -> Found:
    """Money the gateway took for a payment (a success it reported, or an
    amount recorded as paid) is kept for the tickets (CONFIRMED) or is on
    its way back (REFUND_REQUIRED / REFUND_PENDING / REFUND_FAILED) or back
    (REFUNDED): never dropped, a wrong amount or currency (flagged) too."""
    dropped = rows(
        f"SELECT p.status, COUNT(*) {_OF_EVENT} "
        "AND (p.gateway_status = 'success' OR p.paid_amount IS NOT NULL) "
        "AND p.status <> ALL(%s) GROUP BY 1 ORDER BY 1",
        [event.pk, SUCCESS_ENDS],
    )
    problems = [f"{plural(n, 'paid payment')} left {status}" for status, n in dropped]
    owed = _count("p.status = %s", [event.pk, PaymentStatus.REFUND_REQUIRED.value])
    return Found(problems, f"every reported success kept or refunded; {owed} refund required")


@check(invariant=5, when=When.SETTLED)
def payments_settled(event: Event, options: Options) -> Found:
    """No payment left INITIALIZING or PENDING: reconciliation and expiry
    have asked the gateway about every one."""
    live = rows(
        f"SELECT p.status, COUNT(*) {_OF_EVENT} AND p.status = ANY(%s) GROUP BY 1 ORDER BY 1",
        [event.pk, LIVE],
    )
    problems = [f"{plural(n, 'payment')} still {status}" for status, n in live]
    return Found(problems, "no payment in flight")


@check(invariant=7)
def payments_confirmed_once(event: Event, options: Options) -> Found:
    """Each payment moved to CONFIRMED at most once in the log (a repeated
    webhook is one confirmation), and every CONFIRMED payment exactly once."""
    counts = rows(
        f"""
        SELECT confirmed, times, COUNT(*) FROM (
          SELECT p.status = %s AS confirmed,
            (SELECT COUNT(*) FROM {LOG} e
             WHERE e.payment_id = p.id AND e.kind = %s AND e.to_status = %s) AS times
          {_OF_EVENT}
        ) x WHERE times > 1 OR (confirmed AND times = 0) GROUP BY 1, 2 ORDER BY 1, 2
        """,  # noqa: S608
        [CONFIRMED, STATE_CHANGE, CONFIRMED, event.pk],
    )
    problems = []
    for confirmed, times, n in counts:
        if times > 1:
            problems.append(f"{plural(n, 'payment')} confirmed {times} times in the log")
        elif confirmed and times == 0:
            problems.append(f"{plural(n, 'confirmed payment')} with no confirmation in the log")
    webhooks = value(
        f"SELECT COUNT(*) FROM {LOG} e JOIN {PAYMENT} p ON p.id = e.payment_id "  # noqa: S608
        f"JOIN {CLAIM} c ON c.id = p.claim_id WHERE c.event_id = %s AND e.kind = ANY(%s)",
        [event.pk, [EventKind.WEBHOOK_RECEIVED.value, EventKind.WEBHOOK_DUPLICATE.value]],
    )
    return Found(
        problems,
        f"one confirmation each ({plural(int(webhooks), 'webhook')} received)",
        {"webhooks": int(webhooks)},
    )


@check(invariant=7)
def payment_log_complete(event: Event, options: Options) -> Found:
    """The log's state changes run from INITIALIZING to the payment's status,
    each one starting where the last ended (no change unrecorded), and every
    distinct webhook delivery of a payment is in its log."""
    # Per payment: state changes that do not start where the previous one
    # ended, and the status the last one reached.
    broken = rows(
        f"""
        WITH changes AS (
          SELECT e.payment_id, e.from_status, e.to_status,
            LAG(e.to_status, 1, %s) OVER (PARTITION BY e.payment_id ORDER BY e.id) AS previous,
            ROW_NUMBER() OVER (PARTITION BY e.payment_id ORDER BY e.id DESC) AS from_last
          FROM {LOG} e JOIN {PAYMENT} p ON p.id = e.payment_id
          JOIN {CLAIM} c ON c.id = p.claim_id
          WHERE c.event_id = %s AND e.kind = %s
        ), per_payment AS (
          SELECT payment_id, MAX(to_status) FILTER (WHERE from_last = 1) AS last,
            COUNT(*) FILTER (WHERE from_status <> previous) AS gaps
          FROM changes GROUP BY payment_id
        )
        SELECT p.reference, p.status, COALESCE(pp.last, %s), COALESCE(pp.gaps, 0)
        FROM {PAYMENT} p JOIN {CLAIM} c ON c.id = p.claim_id
        LEFT JOIN per_payment pp ON pp.payment_id = p.id
        WHERE c.event_id = %s AND (COALESCE(pp.last, %s) <> p.status OR pp.gaps > 0)
        ORDER BY p.created_at LIMIT 10
        """,  # noqa: S608
        [INITIALIZING, event.pk, STATE_CHANGE, INITIALIZING, event.pk, INITIALIZING],
    )
    problems = []
    for reference, status, reached, gaps in broken:
        if reached != status:
            problems.append(f"{reference} is {status} but its log ends at {reached}")
        if gaps:
            problems.append(f"{reference}: {plural(gaps, 'state change')} out of sequence")
    unlogged = value(
        f"""
        SELECT COUNT(*) {_OF_EVENT} AND
          (SELECT COUNT(*) FROM {RECEIPT} r WHERE r.payment_id = p.id)
          <> (SELECT COUNT(*) FROM {LOG} e WHERE e.payment_id = p.id AND e.kind = %s)
        """,  # noqa: S608
        [event.pk, EventKind.WEBHOOK_RECEIVED.value],
    )
    if unlogged:
        problems.append(f"{plural(unlogged, 'payment')} whose webhook deliveries != logged ones")
    payments = _count("TRUE", [event.pk])
    return Found(problems, f"{plural(payments, 'payment')}, every change in the log")


@check(invariant=7)
def payment_amounts_match(event: Event, options: Options) -> Found:
    """What the gateway says was paid matches the payment's amount and
    currency, or the payment is flagged for staff; a CONFIRMED payment always
    has the gateway's amount recorded."""
    mismatched = _count(
        "p.flag_reason = '' AND (p.status = %s OR p.paid_amount IS NOT NULL) AND "
        "(p.paid_amount IS DISTINCT FROM p.amount OR UPPER(p.paid_currency) <> UPPER(p.currency))",
        [event.pk, CONFIRMED],
    )
    flagged = _count("p.flag_reason <> ''", [event.pk])
    problems = (
        [f"{plural(mismatched, 'payment')} paid a wrong amount or currency, not flagged"]
        if mismatched
        else []
    )
    return Found(problems, f"amounts match; {plural(flagged, 'payment')} flagged for staff")


@check(invariant=7, scope=Scope.DATABASE)
def payment_log_append_only(options: Options) -> Found:
    """Postgres itself refuses UPDATE and DELETE on the payment event log."""
    state = rows(
        "SELECT tgenabled FROM pg_trigger WHERE tgrelid = %s::regclass AND tgname = %s",
        [LOG, APPEND_ONLY_TRIGGER],
    )
    if not state:
        problems = [f"trigger {APPEND_ONLY_TRIGGER} is missing"]
    elif state[0][0] == "D":  # pg_trigger.tgenabled: D = disabled
        problems = [f"trigger {APPEND_ONLY_TRIGGER} is disabled"]
    else:
        problems = []
    return Found(problems, f"{LOG} refuses UPDATE and DELETE ({APPEND_ONLY_TRIGGER})")
