"""Gateway webhooks: verified, deduplicated, applied in one short transaction.

Paystack sends ``charge.success`` for a successful charge (never a webhook for
a declined one: declines are found by verify), ``refund.*`` as a refund
moves, and ``charge.dispute.*`` when a customer's bank disputes a charge.
Every delivery for one of our payments lands in its append-only log, a
repeated one too; anything else is acknowledged (200) and logged, so the
gateway does not retry it for days.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.utils import timezone

from fairqueue.db import prepared_cursor
from fairqueue.errors import AppError, ErrorCode
from fairqueue.locks import locked_transaction, refund_row_lock
from fairqueue.metrics import WEBHOOKS, counted
from fairqueue.news import send_on_commit
from payments.domain import (
    OPEN_REFUND_STATUSES,
    UNPAID_STATUSES,
    EventKind,
    PaymentStatus,
    RefundStatus,
)
from payments.models import Payment, PaymentEvent, Refund, WebhookReceipt
from payments.paystack import merchant_amount, signature_valid
from payments.services.disputes import apply_dispute_webhook
from payments.services.outcomes import apply_success, payment_lock_by_reference
from payments.services.records import (
    PAYMENT_EVENT_FIELDS,
    db_value,
    payment_event_values,
    payment_log,
    payment_transition,
)
from payments.services.refunds import GATEWAY, refund_apply, refund_outside_record
from payments.signals import refunds_to_look_up

logger = logging.getLogger(__name__)

CHARGE_SUCCESS = "charge.success"
REFUND_EVENTS = ("refund.pending", "refund.processing", "refund.processed", "refund.failed")
DISPUTE_EVENTS = ("charge.dispute.create", "charge.dispute.remind", "charge.dispute.resolve")
HANDLED_EVENTS = (CHARGE_SUCCESS, *REFUND_EVENTS, *DISPUTE_EVENTS)


class WebhookOutcome(StrEnum):
    PROCESSED = "processed"
    DUPLICATE = "duplicate"  # already processed: no second effect
    UNKNOWN_REFERENCE = "unknown_reference"
    IGNORED = "ignored"  # an event type we do not act on


@counted(
    WEBHOOKS,
    str,
    expected=[
        *WebhookOutcome,
        ErrorCode.INVALID_SIGNATURE,
        ErrorCode.MALFORMED_REQUEST,
    ],
)
def payment_webhook_receive(*, body: bytes, signature: str | None) -> WebhookOutcome:
    """``body`` is the raw request body: the signature covers those exact
    bytes, so it is checked before anything is parsed. A bad signature
    changes nothing (not even the payment log)."""
    if not signature_valid(body, signature, settings.PAYSTACK_SECRET_KEY):
        logger.warning(
            "paystack webhook rejected: %s signature (%d bytes)",
            "missing" if not signature else "bad",
            len(body),
        )
        raise AppError(
            "The webhook signature is missing or wrong.", code=ErrorCode.INVALID_SIGNATURE
        )
    payload = _parse(body)
    if not isinstance(payload, dict):
        raise AppError("The webhook body is not a JSON object.", code=ErrorCode.MALFORMED_REQUEST)
    event = payload.get("event")
    raw_data = payload.get("data")
    data: dict[str, Any] = raw_data if isinstance(raw_data, dict) else {}
    if event not in HANDLED_EVENTS:
        logger.info("paystack webhook ignored: event=%s reference=%s", event, data.get("reference"))
        return WebhookOutcome.IGNORED
    reference = webhook_reference(event, data)
    if not reference:
        logger.warning("paystack webhook ignored: %s without a transaction reference", event)
        return WebhookOutcome.IGNORED
    return _apply(
        event=event,
        reference=reference,
        key=delivery_key(event=event, reference=reference, data=data, body=body),
        data=data,
        payload=payload,
        body=body,
    )


def webhook_reference(event: str, data: dict[str, Any]) -> str:
    """The transaction an event is about: ``data.reference`` for a charge;
    ``data.transaction_reference`` or ``data.transaction.reference`` for a
    refund or a dispute."""
    if event == CHARGE_SUCCESS:
        candidates = [data.get("reference")]
    else:
        transaction_ = data.get("transaction")
        nested = transaction_.get("reference") if isinstance(transaction_, dict) else None
        candidates = [data.get("transaction_reference"), nested]
    for value in candidates:
        if isinstance(value, str) and value:
            return value[:64]
    return ""


def delivery_key(*, event: str, reference: str, data: dict[str, Any], body: bytes) -> str:
    """What makes a delivery "the same one again". A charge succeeds once
    per reference, whatever the body says; a refund or dispute event is the
    same when its body is (each status change is its own event)."""
    if event == CHARGE_SUCCESS:
        return reference
    digest = hashlib.sha256(body).hexdigest()[:40]
    return f"{reference}:{str(data.get('id') or '')[:64]}:{digest}"


_INT64 = 2**63


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _int64(text: str) -> int:
    value = int(text)
    if not -_INT64 <= value < _INT64:
        raise ValueError("integer out of range")
    return value


def _not_json(name: str) -> float:
    raise ValueError(name)


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def _parse(body: bytes) -> Any:
    """The body's JSON, or None when it is not JSON that Postgres can store
    and Python can use: ``NaN``/``Infinity`` (Python's parser takes them,
    JSON has no such thing), a float that overflows, an integer outside 64
    bits (no amount or id is; a bigint column refuses it), or a ``\\u0000``
    (jsonb and text refuse it). Any of these is a 400, never a 500."""
    try:
        payload = json.loads(body, parse_constant=_not_json, parse_float=_finite, parse_int=_int64)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    # UTF-8 JSON holds U+0000 only as the escape (a raw control character is
    # not JSON, and only UTF-16 or UTF-32 text has zero bytes): a body
    # without either needs no walk through the payload.
    if b"\x00" not in body and b"\\u0000" not in body:
        return payload
    return None if _has_nul(payload) else payload


def _apply(
    *,
    event: str,
    reference: str,
    key: str,
    data: dict[str, Any],
    payload: dict[str, Any],
    body: bytes,
) -> WebhookOutcome:
    with locked_transaction():  # the payment's row, then its claim's, under one lock timeout
        payment = payment_lock_by_reference(reference=reference)
        if payment is None:
            # Not ours (another integration on the same gateway account):
            # answer 200 so the gateway does not retry it for days.
            logger.warning("paystack webhook %s for unknown reference %s", event, reference)
            return WebhookOutcome.UNKNOWN_REFERENCE
        duplicate = not _receipt_record(
            payment=payment,
            event=event,
            key=key,
            transaction_id=str(data.get("id") or "")[:64],
            payload=payload,
            body=body,
        )
        if duplicate:
            logger.info("paystack webhook %s %s already processed", event, reference)
            return WebhookOutcome.DUPLICATE
        if event == CHARGE_SUCCESS:
            apply_success(
                payment=payment,
                amount=merchant_amount(data),
                currency=data.get("currency"),
                transaction_id=str(data.get("id") or ""),
                actor="webhook",
            )
        elif event in REFUND_EVENTS:
            _apply_refund(payment=payment, event=event, data=data)
        else:
            apply_dispute_webhook(payment=payment, event=event, data=data)
    logger.info("paystack webhook %s %s -> payment %s", event, reference, payment.status)
    return WebhookOutcome.PROCESSED


_RECEIPT_FIELDS = [f for f in WebhookReceipt._meta.concrete_fields if not f.primary_key]
_EVENTS_TABLE = PaymentEvent._meta.db_table
# The delivery's receipt and its log entry in one statement: the receipt is
# refused by the one-per-delivery constraint for a repeated delivery, and
# the log entry says which it was (every delivery is logged, a repeated one
# too; it changes nothing else).
_RECEIPT_SQL = f"""
WITH receipt AS (
    INSERT INTO {WebhookReceipt._meta.db_table}
        ({", ".join(f'"{f.column}"' for f in _RECEIPT_FIELDS)})
    VALUES ({", ".join(["%s"] * len(_RECEIPT_FIELDS))})
    ON CONFLICT ON CONSTRAINT webhook_receipt_key_unique DO NOTHING
    RETURNING id
)
INSERT INTO {_EVENTS_TABLE} ({", ".join(f'"{f.column}"' for f in PAYMENT_EVENT_FIELDS)})
SELECT {
    ", ".join(
        "CASE WHEN EXISTS (SELECT 1 FROM receipt) THEN %s ELSE %s END" if f.name == "kind" else "%s"
        for f in PAYMENT_EVENT_FIELDS
    )
}
RETURNING kind
"""  # noqa: S608


def _receipt_record(
    *,
    payment: Payment,
    event: str,
    key: str,
    transaction_id: str,
    payload: dict[str, Any],
    body: bytes,
) -> bool:
    """Record the delivery and log it (one statement); False when it was
    received before."""
    now = timezone.now()
    receipt = WebhookReceipt(
        event_type=event,
        reference=payment.reference,
        key=key,
        payment_id=payment.pk,
        gateway_transaction_id=transaction_id,
        received_at=now,
    )
    entry = PaymentEvent(
        payment_id=payment.pk,
        actor="gateway",
        data=payload,
        raw_body=body.decode("utf-8", errors="replace"),
        created_at=now,
    )
    params = [db_value(f, getattr(receipt, f.attname)) for f in _RECEIPT_FIELDS]
    for field, value in zip(PAYMENT_EVENT_FIELDS, payment_event_values(entry), strict=True):
        if field.name == "kind":
            params += [EventKind.WEBHOOK_RECEIVED.value, EventKind.WEBHOOK_DUPLICATE.value]
        else:
            params.append(value)
    with prepared_cursor() as cursor:
        cursor.execute(_RECEIPT_SQL, params)
        (kind,) = cursor.fetchone()
    return bool(kind == EventKind.WEBHOOK_RECEIVED.value)


def _apply_refund(*, payment: Payment, event: str, data: dict[str, Any]) -> None:
    """A refund event, matched to our refunds by the gateway's refund id
    only, never by "the one open": the refund that has it moves on. An id
    none of ours has, while every request of ours has its answer, is a
    refund we did not ask for (made in the gateway's dashboard): recorded as
    its own (``refund_outside_record``). Otherwise -- no id at all, as in
    Paystack's refund webhooks, or a request of ours still waiting for its
    answer, which may be this very refund -- nothing is decided here: the
    transaction's refunds are listed at the gateway after commit
    (``payment_refunds_sync``), where ours are known by their ids and notes.

    The gateway refunds only a charge that succeeded, so a refund of a
    payment whose success has not reached us (live or FAILED) proves the
    money was taken: the payment goes the refund path first, and its
    success, when it comes, changes nothing."""
    status = event.split(".", 1)[1]
    gateway_id = str(data.get("id") or "")[:64]
    amount = _amount(data.get("amount"))
    currency = data.get("currency")
    expected = payment.paid_currency or payment.currency
    if currency is not None and str(currency).upper() != expected.upper():
        # Not money of this payment as we know it: nothing moves on its word.
        payment_log(
            payment=payment,
            kind=EventKind.FLAGGED,
            actor="webhook",
            data={"reason": f"{event} in {currency!r}, the payment is in {expected!r}"},
        )
        logger.error(
            "paystack %s for payment %s is in %r, not %r: not applied",
            event,
            payment.reference,
            currency,
            expected,
        )
        return
    refunds = Refund.objects.filter(payment=payment)
    refund = refund_row_lock(refunds.filter(gateway_refund_id=gateway_id)) if gateway_id else None
    if refund is not None:
        refund_apply(
            payment=payment,
            refund=refund,
            gateway_status=status,
            actor="webhook",
            gateway_refund_id=gateway_id,
            amount=amount,
        )
        return
    if payment.status in UNPAID_STATUSES and status != "failed":
        payment_transition(
            payment=payment,
            target=PaymentStatus.REFUND_REQUIRED,
            actor="webhook",
            reason=f"{event} for a charge whose success had not reached us",
            flag_reason="Refunded at the gateway before its success reached us.",
        )
    unanswered = refunds.filter(status=RefundStatus.REQUESTED, gateway_refund_id="")
    if gateway_id and not unanswered.exclude(requested_by=GATEWAY).exists():
        refund = refund_outside_record(
            payment=payment, gateway_refund_id=gateway_id, amount=amount, gateway_status=status
        )
        if refund is not None:
            refund_apply(
                payment=payment,
                refund=refund,
                gateway_status=status,
                actor="webhook",
                amount=amount,
            )
        return
    logger.info(
        "paystack %s for payment %s: refund %s is not known yet; the refunds are looked up",
        event,
        payment.reference,
        gateway_id or "(no id)",
    )
    refunds.filter(status__in=OPEN_REFUND_STATUSES).update(next_check_at=timezone.now())
    send_on_commit(refunds_to_look_up, sender=Payment, payment_id=payment.pk)


def _amount(value: Any) -> int | None:
    """Refund amounts arrive as numbers or as digit strings."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, str) and value.isdigit():
        return int(value) or None
    return None
