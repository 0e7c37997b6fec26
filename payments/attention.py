"""Why a payment needs staff, and what they do about it: one explanation per
flag, shown on the payment's admin page (docs/PAYMENTS.md says the same)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from claims.domain import ReturnStatus
from claims.models import TicketReturn
from fairqueue.money import money_format
from payments.domain import (
    DISPUTE_NEEDS_STAFF,
    LIVE_STATUSES,
    DisputeState,
    PaymentStatus,
    RefundStatus,
    mismatch_reason,
)
from payments.models import Payment, Refund

P = PaymentStatus


@dataclass(frozen=True)
class Attention:
    key: str  # the admin filter that lists it ("attention=<key>")
    title: str
    meaning: str
    what_to_do: str


# The admin's "needs attention" filter: each key, its label, and its rows.
def attention_filters(now=None) -> dict[str, tuple[str, Q]]:
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.PAYMENT_STALE_SECONDS)
    return {
        "stuck": (
            "Stuck (INITIALIZING/PENDING past the stale threshold)",
            Q(status__in=LIVE_STATUSES, created_at__lte=stale),
        ),
        "blocked": (
            "Blocked by a merchant-side gateway error",
            Q(status=P.INITIALIZING, blocked_since__isnull=False),
        ),
        "overdue": (
            "Overdue (gateway status not final long after the claim expired)",
            Q(status__in=LIVE_STATUSES, overdue_at__isnull=False),
        ),
        "flagged": ("Flagged (amount/currency mismatch)", ~Q(flag_reason="")),
        "refund_required": ("Refund required", Q(status=P.REFUND_REQUIRED)),
        "refund_pending": ("Refund pending at the gateway", Q(status=P.REFUND_PENDING)),
        "refund_failed": (
            "Refund failed",
            Q(status=P.REFUND_FAILED)
            | Q(status=P.CONFIRMED, claim_id__in=resale_refunds_failed().values("claim_id")),
        ),
        "disputed": (
            "Disputed or reversed at the customer's bank",
            Q(dispute__in=[d.value for d in DISPUTE_NEEDS_STAFF]),
        ),
    }


def resale_refunds_failed() -> QuerySet[TicketReturn]:
    """Resold returns whose refund failed and was not asked for again: the
    return still names the failed refund (a retry opens another)."""
    failed = Refund.objects.filter(for_resale=True, status=RefundStatus.FAILED)
    return TicketReturn.objects.filter(
        status=ReturnStatus.RESOLD, refund_id__in=failed.values("pk")
    )


@dataclass(frozen=True)
class _Facts:
    """What ``payment_attention`` reads beyond the payment's own row."""

    resale_failed_n: int  # resold tickets of its claim whose refund failed
    resale_failed_total: int | None
    resale_failed_why: str | None  # the latest such refund's failure
    last_refund_failure: str | None  # the payment's own latest refund's failure


_FACTS = tuple(_Facts.__dataclass_fields__)


def with_attention_facts(payments: QuerySet[Payment]) -> QuerySet[Payment]:
    """The payments with what ``payment_attention`` reads of their refunds
    and returns, in the same query: a list of payments explained costs one
    query, however many rows it shows."""
    failed = resale_refunds_failed().filter(claim_id=OuterRef("claim_id")).order_by()
    per_claim = failed.values("claim_id")
    refund = Refund.objects.filter(pk=OuterRef("refund_id"))
    latest_failed = failed.annotate(
        refund_at=Subquery(refund.values("created_at")[:1]),
        refund_why=Subquery(refund.values("failure_reason")[:1]),
    ).order_by("-refund_at")
    return payments.annotate(
        resale_failed_n=Coalesce(
            Subquery(per_claim.annotate(n=Count("pk")).values("n")[:1]), 0
        ),
        resale_failed_total=Subquery(
            per_claim.annotate(total=Sum("refund_amount")).values("total")[:1]
        ),
        resale_failed_why=Subquery(latest_failed.values("refund_why")[:1]),
        last_refund_failure=Subquery(
            Refund.objects.filter(payment_id=OuterRef("pk"))
            .order_by("-created_at")
            .values("failure_reason")[:1]
        ),
    )


def _facts(payment: Payment) -> _Facts:
    """The payment's facts: annotated (``with_attention_facts``), or read
    for this one payment."""
    if all(hasattr(payment, name) for name in _FACTS):
        return _Facts(*(getattr(payment, name) for name in _FACTS))
    return _Facts(
        **with_attention_facts(Payment.objects.filter(pk=payment.pk)).values(*_FACTS).get()
    )


def payment_attention(payment: Payment, now=None) -> list[Attention]:
    """Every reason this payment needs (or may need) staff, explained."""
    now = now or timezone.now()
    found: list[Attention] = []
    live = payment.status in LIVE_STATUSES
    stale = payment.created_at <= now - timedelta(seconds=settings.PAYMENT_STALE_SECONDS)
    if payment.blocked_since and payment.status == P.INITIALIZING:
        found.append(
            Attention(
                "blocked",
                "Blocked by a merchant-side gateway error",
                "The gateway refused our account or our request when this payment started "
                "(a wrong or rotated secret key, a currency or channel not enabled, an invalid "
                "request): not the customer's fault. The claim is held (up to "
                f"{settings.PAYMENT_IN_PROGRESS_MAX_SECONDS} s past its expiry) and gets the "
                "lost time back once the gateway accepts the payment; the open gateway "
                "incident shows the gateway's message.",
                "Fix the cause in the gateway account or our settings; payments retry by "
                "themselves (at once when any payment gets through). 'Fail and release the "
                "claim' only to give the tickets back to sale.",
            )
        )
    elif live and payment.overdue_at:
        found.append(
            Attention(
                "overdue",
                f"Overdue: still '{payment.gateway_status or 'pending'}' at the gateway",
                "The gateway kept this payment in a non-final status (ongoing, pending, "
                f"processing, queued) {settings.PAYMENT_IN_PROGRESS_MAX_SECONDS} s past its "
                "claim's expiry, so the claim was released and its tickets went back on sale. "
                "The payment is still verified: a late success re-instates the claim if "
                "tickets are free, else it is refunded.",
                "'Verify with the gateway now'; if the customer gave up, 'Fail and release "
                "the claim' ends it.",
            )
        )
    elif live and stale:
        found.append(
            Attention(
                "stuck",
                "Stuck: not settled by the gateway yet",
                "No success or failure yet; reconciliation verifies it on a backoff and claim "
                "expiry asks the gateway before releasing the claim.",
                "'Verify with the gateway now'. If the customer never paid, 'Fail and release "
                "the claim' gives the tickets back.",
            )
        )
    if _paid_wrongly(payment):
        found.append(
            Attention(
                "flagged",
                "Flagged: the gateway's amount or currency does not match",
                f"{payment.flag_reason}. Money we did not ask for never pays for tickets: the "
                "payment was not confirmed (its claim, if still held, runs its course) and "
                "the money goes back.",
                "Check the transaction in the gateway's dashboard; the money goes back as "
                "'Refund required' below says.",
            )
        )
    if payment.status == P.REFUND_REQUIRED:
        auto = settings.PAYSTACK_AUTO_REFUND
        found.append(
            Attention(
                "refund_required",
                "Refund required",
                f"Paid ({payment.flag_reason or 'no tickets could be given for it'}), "
                "but this payment pays for no tickets. "
                + (
                    "The automatic refund starts within one reconciliation interval."
                    if auto
                    else "Automatic refunds are off (PAYSTACK_AUTO_REFUND)."
                ),
                "Nothing, if the automatic refund runs. Otherwise 'Refund through the "
                "gateway', or refund by other means and 'Mark refunded'.",
            )
        )
    if payment.status == P.REFUND_PENDING:
        found.append(
            Attention(
                "refund_pending",
                "Refund pending at the gateway",
                "The gateway accepted the refund; its refund.processed webhook (or "
                "reconciliation looking it up) makes the payment REFUNDED.",
                "Nothing, unless it stays pending for days: then check it in the gateway's "
                "dashboard.",
            )
        )
    if payment.status == P.REFUND_FAILED:
        why = _facts(payment).last_refund_failure or ""
        found.append(
            Attention(
                "refund_failed",
                "Refund failed",
                f"The gateway could not refund{': ' + why if why else ''}. The customer "
                "has not got the money back.",
                "'Refund through the gateway' to try again (all, or part), or refund by other "
                "means and 'Mark refunded'.",
            )
        )
    if payment.status == P.CONFIRMED:
        resale = _resale_refund_failed_attention(payment)
        if resale is not None:
            found.append(resale)
    if payment.dispute in DISPUTE_NEEDS_STAFF:
        found.append(_dispute_attention(payment))
    return found


def _resale_refund_failed_attention(payment: Payment) -> Attention | None:
    """Resold tickets of this purchase whose refund to the first buyer failed."""
    facts = _facts(payment)
    count = facts.resale_failed_n
    if not count:
        return None
    why = facts.resale_failed_why
    amount = money_format(facts.resale_failed_total or 0, payment.paid_currency or payment.currency)
    tickets = "a resold ticket" if count == 1 else f"{count} resold tickets"
    return Attention(
        "refund_failed",
        "Resale refund failed",
        f"The refund of {tickets} ({amount}) to the buyer who returned them failed"
        f"{': ' + why if why else ''}. Their ticket was sold again; they have not got "
        "the money back. The payment and the purchase's other tickets are unaffected.",
        "'Retry the resale refund' asks the gateway again. Never 'Refund through the "
        "gateway' for it: that refunds the whole purchase.",
    )


def _paid_wrongly(payment: Payment) -> bool:
    """The gateway reported a success of another amount or currency, and its
    refund has not started yet."""
    return (
        payment.status == P.REFUND_REQUIRED
        and payment.gateway_status == "success"
        and bool(
            mismatch_reason(
                expected_amount=payment.amount,
                expected_currency=payment.currency,
                paid_amount=payment.paid_amount,
                paid_currency=payment.paid_currency,
            )
        )
    )


def _dispute_attention(payment: Payment) -> Attention:
    amount = money_format(payment.paid_amount or payment.amount, payment.currency)
    if payment.dispute == DisputeState.OPEN:
        meaning = (
            f"The customer's bank disputes the charge of {amount} (a chargeback claim). "
            "Its tickets stay valid until you decide; the claim is flagged too."
        )
        todo = (
            "Answer the dispute in the gateway's dashboard. To give in: 'Refund through the "
            "gateway' (the tickets go back on sale). To keep the sale: 'Keep the tickets'."
        )
    elif payment.dispute == DisputeState.LOST:
        meaning = (
            f"The bank resolved the dispute for the customer: the {amount} went back to them. "
            "The tickets are still valid."
        )
        todo = (
            "'Mark refunded' records the money as returned and releases the tickets; "
            "'Keep the tickets' leaves them valid (e.g. already used)."
        )
    else:
        meaning = (
            f"The gateway reports the charge of {amount} as reversed: the money went back "
            "to the customer. The tickets are still valid."
        )
        todo = (
            "'Mark refunded' records it and releases the tickets; 'Keep the tickets' "
            "leaves them valid."
        )
    return Attention("disputed", f"Disputed: {payment.dispute}", meaning, todo)
