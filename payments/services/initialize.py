"""Starting a payment for a claim (the outbox pattern).

1. A short transaction writes the Payment in INITIALIZING with its unique
   reference and logs the request it is about to send.
2. The gateway is called outside any transaction.
3. A second short transaction moves INITIALIZING -> PENDING (conditional)
   with the authorization_url and logs the answer.

A crash between any two steps leaves a row that reconciliation finishes.
Concurrent calls for one claim meet at the partial unique index "one live
payment per claim": one row, one gateway call.

A refusal is never the buyer's fault here: the gateway refusing our key, our
account or our request (any 4xx but "duplicate reference") leaves the payment
waiting in INITIALIZING and the claim held; the customer hears 503 + Retry-After,
staff get an incident, and the claim gets the lost time back once the gateway
accepts the payment.
"""

from __future__ import annotations

import logging
import secrets
import uuid
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from claims.domain import ClaimStatus
from claims.services import claim_extend, claim_lock, claim_payment_started
from fairqueue.errors import Busy, Conflict, ErrorCode, Gone, InvalidTransition
from fairqueue.faults import fault_point
from fairqueue.locks import locked_transaction
from fairqueue.public_url import public_base_url
from payments.domain import (
    LIVE_STATUSES,
    EventKind,
    PaymentStatus,
    VerifyOutcome,
    backoff_seconds,
    verify_outcome,
)
from payments.models import Payment
from payments.paystack import GatewayPermanentError, GatewayTransientError, PaystackClient
from payments.services.incidents import (
    gateway_incident_record,
    gateway_incident_resolve,
    gateway_incident_resolve_statement,
    gateway_incident_resolved,
)
from payments.services.outcomes import (
    apply_failure,
    apply_verify,
    log_verify_result,
    payment_lock,
)
from payments.services.records import (
    first_check_seconds,
    lease_seconds,
    payment_create,
    payment_entry,
    payment_lease_take,
    payment_log,
    payment_next_check,
    payment_transition,
    payment_transition_with,
)
from payments.services.verify import gateway_verify

logger = logging.getLogger(__name__)

P = PaymentStatus
# After a transient failure the customer is told to come back after this long.
RETRY_AFTER_SECONDS = 5
# After a merchant-side refusal: a fix on our side takes a person, not a second.
MERCHANT_RETRY_AFTER_SECONDS = 30
# A payment blocked by a merchant-side refusal is tried again at most this
# often while the incident lasts (sooner once any payment gets through).
MERCHANT_RETRY_CAP_SECONDS = 600


def new_reference() -> str:
    """Only characters Paystack documents for a reference: letters, digits,
    ``-``, ``.`` and ``=``."""
    return "fq-" + secrets.token_hex(12)


def callback_url(base_url: str | None = None) -> str:
    """Where the gateway sends the customer back: ``base_url`` (the host the
    customer used, see fairqueue/public_url.py), else PUBLIC_BASE_URL."""
    return f"{(base_url or public_base_url()).rstrip('/')}/payments/return/"


def _logged_callback(payment: Payment) -> str | None:
    """The callback URL sent with the payment's first initialize request: a
    retry (reconciliation) sends the customer back to the same host."""
    data = (
        payment.events.filter(kind=EventKind.INITIALIZE_REQUESTED)
        .order_by("created_at", "id")
        .values_list("data", flat=True)
        .first()
    )
    return data.get("callback_url") if isinstance(data, dict) else None


@dataclass(frozen=True)
class PaymentStart:
    payment: Payment
    created: bool  # False: the claim's live payment, returned as it is
    request: dict[str, Any] | None = None  # created: the initialize request it logged


def payment_open(
    *, claim_id: uuid.UUID, customer_id: uuid.UUID | None, base_url: str | None = None
) -> PaymentStart:
    """Step 1: the claim's live payment, or a new one in INITIALIZING (the
    caller then owns its gateway call: its lease runs from now).

    The claim row is locked for this short transaction, so a release or an
    expiry cannot slip in between the check and the new payment (that would
    hand out a checkout link for a released claim): it waits for us, or we
    see its result."""
    with locked_transaction():
        claim = claim_lock(claim_id=claim_id, customer_id=customer_id)
        if claim.status == ClaimStatus.CONFIRMED:
            raise Conflict("This claim is already paid.", code=ErrorCode.ALREADY_PAID)
        if claim.status != ClaimStatus.CLAIMED:
            raise InvalidTransition(
                "This claim was released; it can no longer be paid.",
                code=ErrorCode.CLAIM_NOT_PAYABLE,
                details={"claim_status": claim.status},
            )
        # Past its expiry a claim with a payment in flight is kept until the
        # gateway has been asked (invariant 5): its payment is still shown.
        # The claim's flag says whether it has a live payment (set and
        # cleared with it, in the payment's transactions): a first start
        # does not look.
        live = _live_payment(claim_id) if claim.payment_in_flight else None
        if live is not None:
            return PaymentStart(live, created=False)
        now = timezone.now()
        if claim.expires_at <= now:
            raise Gone("This claim has expired.", code=ErrorCode.CLAIM_EXPIRED)
        payment = Payment(
            claim=claim,
            customer_id=claim.customer_id,
            reference=new_reference(),
            email=claim.customer.email,
            amount=claim.amount,
            currency=claim.currency,
            next_check_at=now
            + timedelta(seconds=max(settings.PAYMENT_STALE_SECONDS, lease_seconds())),
        )
        request = _initialize_request(payment, callback=callback_url(base_url))
        created = payment_create(
            payment=payment,
            actor="customer",
            kind=EventKind.INITIALIZE_REQUESTED,
            data=request,
            also=claim_payment_started(claim=claim),
        )
        if not created:  # a live payment its flag did not tell of (the flag is set now)
            live = _live_payment(claim_id)
            if live is None:
                raise RuntimeError(f"claim {claim_id}: its new payment was refused, none is live")
            return PaymentStart(live, created=False)
    return PaymentStart(payment, created=True, request=request)


def _live_payment(claim_id: uuid.UUID) -> Payment | None:
    return Payment.objects.filter(claim_id=claim_id, status__in=LIVE_STATUSES).first()


def _initialize_request(payment: Payment, *, callback: str | None = None) -> dict[str, Any]:
    return {
        "email": payment.email,
        "amount": payment.amount,
        "currency": payment.currency,
        "reference": payment.reference,
        "callback_url": callback or _logged_callback(payment) or callback_url(),
        "metadata": {
            "claim_id": str(payment.claim_id),
            "event_id": str(payment.claim.event_id),
            "payment_id": str(payment.pk),
        },
    }


class InitOutcome(StrEnum):
    PENDING = "pending"  # the gateway has it; authorization_url stored
    SETTLED = "settled"  # someone else (a webhook, a verify) moved it on already
    BLOCKED = "blocked"  # refused for a merchant-side reason: waits, claim kept
    ORPHANED = "orphaned"  # the gateway has it but its answer was lost: FAILED, claim kept
    UNKNOWN = "unknown"  # the gateway says it exists yet cannot tell us more


def payment_gateway_initialize(
    *, payment: Payment, actor: str, request: dict[str, Any] | None = None
) -> InitOutcome:
    """Steps 2 and 3 for an INITIALIZING payment whose lease the caller holds
    (``request``: the one logged at its start, when the caller has it);
    ``payment`` is brought up to date in memory when it moved to PENDING.
    Raises GatewayTransientError when the gateway did not answer after the
    client's retries (the payment stays INITIALIZING)."""
    request = request or _initialize_request(payment)
    try:
        answer = PaystackClient().initialize(**request)
    except GatewayTransientError as exc:
        with transaction.atomic():
            payment_log(
                payment=payment,
                kind=EventKind.INITIALIZE_ERROR,
                actor=actor,
                data={"transient": True, "error": str(exc), "http_status": exc.status_code},
            )
        raise
    except GatewayPermanentError as exc:
        if exc.duplicate_reference:
            # An earlier attempt got through (its answer was lost): ask
            # the gateway what became of it instead of failing.
            _log_error(payment, exc, actor)
            return _initialize_resolve_duplicate(payment=payment, actor=actor)
        _block(payment=payment, exc=exc, actor=actor)
        return InitOutcome.BLOCKED

    fault_point("payment.after_gateway_answer")
    caller = payment
    with locked_transaction():
        payment = payment_lock(payment_id=payment.pk)
        blocked_since = payment.blocked_since
        answered = payment_entry(
            payment=payment, kind=EventKind.INITIALIZE_ANSWER, actor="gateway", data=answer.raw
        )
        moved = False
        if payment.status == P.INITIALIZING:
            # The answer logged with the move, and the operation's open
            # incident (if any) closed: one statement.
            moved, closed = payment_transition_with(
                gateway_incident_resolve_statement(operation="initialize"),
                payment=payment,
                target=P.PENDING,
                actor=actor,
                reason="gateway accepted the transaction",
                logged_first=answered,
                authorization_url=answer.authorization_url[:500],
                access_code=answer.access_code[:100],
                blocked_since=None,
                next_check_at=timezone.now() + timedelta(seconds=first_check_seconds()),
            )
            gateway_incident_resolved(operation="initialize", closed=closed)
        else:
            payment_log(
                payment=payment, kind=EventKind.INITIALIZE_ANSWER, actor="gateway", data=answer.raw
            )
            closed = gateway_incident_resolve(operation="initialize")
        if moved and blocked_since is not None:
            # The customer could not pay through no fault of theirs: the
            # claim gets the time the outage took from it.
            lost = (timezone.now() - blocked_since).total_seconds()
            claim_extend(claim_id=payment.claim_id, seconds=lost)
            logger.info("payment %s unblocked; claim extended by %.0fs", payment.reference, lost)
        if closed:
            _unblock_all()
    if moved:
        for field in Payment._meta.concrete_fields:
            setattr(caller, field.attname, getattr(payment, field.attname))
    return InitOutcome.PENDING if moved else InitOutcome.SETTLED


def _block(*, payment: Payment, exc: GatewayPermanentError, actor: str) -> None:
    """A merchant-side refusal: the payment waits in INITIALIZING (its claim
    stays held, payments owns its expiry), tried again on a backoff or as
    soon as the gateway accepts any payment; staff get the incident."""
    with transaction.atomic():
        payment = payment_lock(payment_id=payment.pk)
        _log_error(payment, exc, actor)
        payment_log(
            payment=payment,
            kind=EventKind.MERCHANT_ERROR,
            actor=actor,
            data={
                "operation": "initialize",
                "http_status": exc.status_code,
                "error": exc.gateway_message,
                "claim_kept": True,
            },
        )
        now = timezone.now()
        after = backoff_seconds(
            base=MERCHANT_RETRY_AFTER_SECONDS, checks=payment.checks, cap=MERCHANT_RETRY_CAP_SECONDS
        )
        Payment.objects.filter(pk=payment.pk).update(
            blocked_since=payment.blocked_since or now,
            next_check_at=now + timedelta(seconds=after),
            updated_at=now,
        )
    gateway_incident_record(operation="initialize", error=exc, reference=payment.reference)


def _unblock_all() -> None:
    """The gateway accepts payments again: every blocked one is due now
    (customers retrying and reconciliation get through at once)."""
    Payment.objects.filter(status=P.INITIALIZING, blocked_since__isnull=False).update(
        next_check_at=timezone.now()
    )


def _log_error(payment: Payment, exc: GatewayPermanentError, actor: str) -> None:
    payment_log(
        payment=payment,
        kind=EventKind.INITIALIZE_ERROR,
        actor=actor,
        data={
            "transient": False,
            "error": exc.gateway_message,
            "http_status": exc.status_code,
            "answer": exc.body if isinstance(exc.body, dict) else None,
        },
    )


def _initialize_resolve_duplicate(*, payment: Payment, actor: str) -> InitOutcome:
    """The gateway already has this reference. Nobody received its
    authorization_url (we answer the customer only after storing it), so
    unless it is being paid the transaction is unreachable: fail the payment
    without releasing the claim, and the customer starts a new one."""
    call = gateway_verify(payment=payment, actor=actor)  # raises GatewayTransientError
    if call.answer is None:
        payment_next_check(payment_id=payment.pk, after_seconds=settings.PAYMENT_STALE_SECONDS)
        return InitOutcome.UNKNOWN
    answer = call.answer
    with transaction.atomic():
        payment = payment_lock(payment_id=payment.pk)
        if verify_outcome(answer.status) in (VerifyOutcome.SUCCESS, VerifyOutcome.IN_PROGRESS):
            apply_verify(payment=payment, answer=answer, actor=actor, release_claim=True)
            if payment.status == P.INITIALIZING:
                payment_transition(
                    payment=payment,
                    target=P.PENDING,
                    actor=actor,
                    reason=f"gateway has the transaction ({answer.status})",
                    next_check_at=timezone.now()
                    + timedelta(seconds=settings.PAYMENT_STALE_SECONDS),
                )
            return InitOutcome.SETTLED
        log_verify_result(payment=payment, answer=answer, actor=actor)
        apply_failure(
            payment=payment,
            reason="initialize answer lost; the transaction never reached the customer",
            actor=actor,
            release_claim=False,
            gateway_status=answer.status,
        )
    return InitOutcome.ORPHANED


def payment_initialize(
    *, claim_id: uuid.UUID, customer_id: uuid.UUID, base_url: str | None = None
) -> PaymentStart:
    """POST /claims/{id}/payments/: the claim's live payment, with the
    gateway's authorization_url once the gateway has accepted it.
    ``base_url``: the site as the customer reached it (the callback's host)."""
    start = payment_open(claim_id=claim_id, customer_id=customer_id, base_url=base_url)
    payment = start.payment
    if payment.status != P.INITIALIZING:
        return start
    if not start.created and not payment_lease_take(payment_id=payment.pk):
        if payment.blocked_since is not None:
            raise _unavailable(payment)
        return start  # another request (or reconciliation) is talking to the gateway
    if start.created:
        fault_point("payment.after_initializing")
    try:
        outcome = payment_gateway_initialize(
            payment=payment, actor="customer", request=start.request
        )
    except GatewayTransientError as exc:
        # Stays INITIALIZING; free the lease so a retry (or reconciliation) resumes it.
        payment_next_check(payment_id=payment.pk, after_seconds=exc.retry_after or 0)
        raise _gateway_unavailable(
            payment, retry_after=max(RETRY_AFTER_SECONDS, exc.retry_after or 0)
        ) from None
    if outcome != InitOutcome.PENDING:  # a PENDING one is up to date already
        payment.refresh_from_db()
    if outcome == InitOutcome.BLOCKED:
        raise _unavailable(payment)
    if outcome in (InitOutcome.ORPHANED, InitOutcome.UNKNOWN):
        raise _gateway_unavailable(payment, retry_after=1)
    return PaymentStart(payment, created=start.created)


def _gateway_unavailable(payment: Payment, *, retry_after: int) -> Busy:
    """The gateway did not answer after our retries: the payment is kept in
    INITIALIZING (reconciliation finishes it); try again shortly."""
    return Busy(
        "The payment gateway is not answering; retry shortly.",
        code=ErrorCode.GATEWAY_UNAVAILABLE,
        retry_after=retry_after,
        details={"payment_id": str(payment.pk)},
    )


def _unavailable(payment: Payment) -> Busy:
    """The gateway refused us for a reason on our side (our key, our account,
    our request): not the buyer's fault. The payment waits, the claim is kept
    (and gets the lost time back), staff are alerted; try again later."""
    wait = (payment.next_check_at - timezone.now()).total_seconds()
    return Busy(
        "Payments are unavailable for a moment; your tickets stay held. Retry shortly.",
        code=ErrorCode.PAYMENTS_UNAVAILABLE,
        retry_after=max(1, min(MERCHANT_RETRY_AFTER_SECONDS, int(wait + 0.999))),
        details={"payment_id": str(payment.pk), "claim_id": str(payment.claim_id)},
    )
