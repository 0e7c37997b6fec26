"""Expired claims with a payment in flight: the payments app owns them
(invariant 5). Claim expiry (claims) leaves them alone; here the gateway is
asked first, and a claim is released only when its payment has failed."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from claims.domain import ClaimStatus, ReleaseReason
from claims.models import Claim
from claims.services import claim_release
from fairqueue.errors import InvalidTransition
from payments.services.reconcile import payment_settle_before_expiry

logger = logging.getLogger(__name__)


@dataclass
class PayingExpiryReport:
    released: int = 0  # the gateway said the payment failed: claim released
    left_alone: int = 0  # pending, paid, or no answer: kept, looked at again next run


def paying_claims_expire(
    *, now: datetime | None = None, limit: int = 500, time_budget_seconds: float = 20.0
) -> PayingExpiryReport:
    """CLAIMED claims past ``expires_at`` whose payment is in flight: each one's
    payment is verified with the gateway (outside any transaction), and only
    a failed or abandoned payment lets the claim go."""
    now = now or timezone.now()
    deadline = time.monotonic() + time_budget_seconds
    report = PayingExpiryReport()
    ids = list(
        Claim.objects.filter(
            status=ClaimStatus.CLAIMED, expires_at__lte=now, payment_in_flight=True
        )
        .order_by("expires_at")
        .values_list("id", flat=True)[:limit]
    )
    for claim_id in ids:
        if time.monotonic() > deadline:
            report.left_alone += 1  # the next run goes on
            continue
        try:
            may_release = payment_settle_before_expiry(claim_id=claim_id)
        except Exception:  # one claim's gateway trouble must not stop the others
            logger.exception("payment check before expiry failed for claim %s", claim_id)
            may_release = False
        if not may_release:
            report.left_alone += 1
            continue
        try:
            claim_release(claim_id=claim_id, reason=ReleaseReason.EXPIRED)
            report.released += 1
        except InvalidTransition:
            report.left_alone += 1  # paid, or released by payments, meanwhile
    if report.released or report.left_alone:
        logger.info("paying claims expiry %s", report)
    return report
