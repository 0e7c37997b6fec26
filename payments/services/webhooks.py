"""Gateway webhooks: verified, deduplicated, applied in one short transaction."""

from __future__ import annotations

import json
import logging
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from fairqueue.metrics import WEBHOOKS, counted
from payments.domain import EventKind
from payments.errors import InvalidSignature, MalformedWebhook
from payments.models import Payment, WebhookReceipt
from payments.paystack import signature_valid
from payments.services.outcomes import apply_failure, apply_success
from payments.services.records import payment_log

logger = logging.getLogger(__name__)

HANDLED_EVENTS = ("charge.success", "charge.failed")


class WebhookOutcome(StrEnum):
    PROCESSED = "processed"
    DUPLICATE = "duplicate"  # already processed: no second effect
    UNKNOWN_REFERENCE = "unknown_reference"
    IGNORED = "ignored"  # an event type we do not act on


@counted(WEBHOOKS, str)
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
        raise InvalidSignature()
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        payload = None
    if not isinstance(payload, dict):
        raise MalformedWebhook()
    event = payload.get("event")
    data = payload.get("data") if isinstance(payload.get("data"), dict) else {}
    reference = data.get("reference")
    if event not in HANDLED_EVENTS:
        logger.info("paystack webhook ignored: event=%s reference=%s", event, reference)
        return WebhookOutcome.IGNORED
    if not isinstance(reference, str) or not reference:
        logger.warning("paystack webhook ignored: %s without a reference", event)
        return WebhookOutcome.IGNORED
    return _apply(event=event, reference=reference, data=data, payload=payload, body=body)


def _apply(
    *, event: str, reference: str, data: dict[str, Any], payload: dict[str, Any], body: bytes
) -> WebhookOutcome:
    with transaction.atomic():
        payment = Payment.objects.select_for_update().filter(reference=reference).first()
        if payment is None:
            # Not ours (another integration on the same gateway account):
            # answer 200 so the gateway does not retry it forever.
            logger.warning("paystack webhook %s for unknown reference %s", event, reference)
            return WebhookOutcome.UNKNOWN_REFERENCE
        try:
            with transaction.atomic():
                WebhookReceipt.objects.create(
                    event_type=event,
                    reference=reference,
                    payment=payment,
                    gateway_transaction_id=str(data.get("id") or "")[:64],
                )
        except IntegrityError:
            duplicate = True
        else:
            duplicate = False
        # Every delivery is in the log, a repeated one too (it changes nothing else).
        payment_log(
            payment=payment,
            kind=EventKind.WEBHOOK_DUPLICATE if duplicate else EventKind.WEBHOOK_RECEIVED,
            actor="gateway",
            data=payload,
            raw_body=body.decode("utf-8", errors="replace"),
        )
        if duplicate:
            logger.info("paystack webhook %s %s already processed", event, reference)
            return WebhookOutcome.DUPLICATE
        if event == "charge.success":
            apply_success(
                payment=payment,
                amount=data.get("amount"),
                currency=data.get("currency"),
                transaction_id=str(data.get("id") or ""),
                actor="webhook",
            )
        else:
            apply_failure(
                payment=payment,
                reason=f"charge.failed: {data.get('gateway_response') or 'declined'}",
                actor="webhook",
                release_claim=True,
                gateway_status=str(data.get("status") or "failed"),
            )
    logger.info("paystack webhook %s %s -> payment %s", event, reference, payment.status)
    return WebhookOutcome.PROCESSED
