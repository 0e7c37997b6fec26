"""Records that are only useful for a while: one-time codes (dead after
OTP_TTL, kept a day for support questions) and Idempotency-Key answers (a
client retries within seconds or minutes; Stripe keeps them a day too), and
expired admin sessions. Without a purge these tables only grow, one row per
sign-in and per claim or payment of every sale."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.sessions.models import Session
from django.db.models import Model, QuerySet
from django.utils import timezone

from customers.models import IdempotencyKey, OneTimeCode

BATCH = 5_000  # rows per DELETE: short transactions, no long lock on a busy table


def _delete_in_batches(queryset: QuerySet[Model]) -> int:
    deleted = 0
    while ids := list(queryset.values_list("pk", flat=True)[:BATCH]):
        count, _ = queryset.model._default_manager.filter(pk__in=ids).delete()
        deleted += count
    return deleted


def records_purge(*, now: datetime | None = None) -> dict[str, int]:
    """Delete what is past its retention. Idempotent; returns rows deleted."""
    now = now or timezone.now()
    codes_before = now - timedelta(hours=settings.OTP_CODE_RETENTION_HOURS)
    keys_before = now - timedelta(hours=settings.IDEMPOTENCY_KEY_RETENTION_HOURS)
    return {
        "otp_codes": _delete_in_batches(OneTimeCode.objects.filter(expires_at__lt=codes_before)),
        "idempotency_keys": _delete_in_batches(
            IdempotencyKey.objects.filter(created_at__lt=keys_before)
        ),
        "sessions": _delete_in_batches(Session.objects.filter(expire_date__lt=now)),
    }
