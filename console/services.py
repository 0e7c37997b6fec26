"""Writes of the console: Redis rebuilt from Postgres (invariant 2), and the
organizer's actions on orders (release an unpaid one, refund a paid one),
each through the owning app's services."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.db import transaction

from claims.domain import ClaimStatus, ReleaseReason
from claims.models import Claim
from claims.services import claim_lock, claim_release
from events.selectors import events_live
from fairqueue.errors import Conflict, ErrorCode, InvalidTransition
from fairqueue.redis import RedisUnavailable
from inventory.services import inventory_sync_event
from payments.models import Refund
from payments.selectors import payments_to_refund
from payments.services import payment_refund_by_staff
from queueing.services import queue_rebuild

logger = logging.getLogger(__name__)


def redis_rebuild(*, event_id: uuid.UUID | str | None = None) -> dict[str, dict[str, Any]]:
    """For every live event (or one): inventory counters to Postgres truth,
    waiting and admitted sets back where missing, in their exact order. With
    Redis unreachable nothing can be rebuilt: the report says so, and the
    reconciliation does it once Redis is back."""
    events = events_live()
    if event_id is not None:
        events = events.filter(pk=event_id)
    report: dict[str, dict[str, Any]] = {}
    for event in events:
        healed = inventory_sync_event(event_id=event.pk)
        try:
            queue = queue_rebuild(event_id=event.pk)
        except RedisUnavailable:
            queue = {"skipped": "redis_unavailable"}
        report[str(event.pk)] = {"inventory_healed": len(healed), "queue": queue}
        logger.info("redis rebuilt event=%s %s", event.pk, report[str(event.pk)])
    return report


def order_release(*, claim_id: uuid.UUID | str, actor: str) -> Claim:
    """An organizer gives an unpaid order's tickets back to sale. Refused for
    anything but an unpaid order, and while a payment for it is in flight
    (the customer may be paying right now: invariant 5). The claim row is
    locked first, so a payment cannot start in between."""
    with transaction.atomic():
        claim = claim_lock(claim_id=claim_id)
        if claim.status != ClaimStatus.CLAIMED:
            raise InvalidTransition(
                f"A {claim.status} order cannot be released.",
                details={"from": claim.status, "to": ClaimStatus.RELEASED.value},
            )
        if claim.payment_in_flight:
            raise Conflict(
                "A payment for this order is in flight; it can be released once that "
                "payment has failed or expired.",
                code=ErrorCode.PAYMENT_IN_FLIGHT,
            )
        released = claim_release(claim_id=claim.pk, reason=ReleaseReason.STAFF)
    logger.info("order released by %s claim=%s event=%s", actor, claim.pk, claim.event_id)
    return released


def order_refund(*, claim_id: uuid.UUID, actor: str, reason: str) -> Refund:
    """An organizer refunds a paid order: everything its account still holds
    for its tickets goes back through the payment that paid it, and the
    order is cancelled (its tickets void and back on sale, the buyer
    emailed), as a refund by platform staff does. Refused (409) for an
    order with no payment that can be refunded now."""
    payment = payments_to_refund(claim_ids=[claim_id]).get(claim_id)
    if payment is None:
        raise InvalidTransition("This order has no payment to refund: it was never paid.")
    refund = payment_refund_by_staff(payment_id=payment.pk, actor=actor, reason=reason)
    logger.info(
        "order refunded by %s claim=%s payment=%s amount=%s",
        actor,
        claim_id,
        payment.reference,
        refund.amount,
    )
    return refund
