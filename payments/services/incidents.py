"""Merchant-side refusals: the gateway turns us down for a reason on our side
(a rotated or wrong secret key, a currency or channel not enabled on the
account, a request it finds invalid). They are our faults, never the buyer's:
the buyer is told to retry later and keeps the claim, and staff are alerted
by an ERROR log line and an open ``GatewayIncident`` row (its ``failures``
count is what monitoring reads)."""

from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from fairqueue.db import prepared_cursor
from payments.models import GatewayIncident
from payments.paystack import GatewayPermanentError

logger = logging.getLogger(__name__)


def gateway_incident_record(
    *, operation: str, error: GatewayPermanentError, reference: str
) -> GatewayIncident:
    """Count one refusal on the operation's open incident (opening one if
    none is open). Safe under concurrency: the partial unique index allows
    one open incident per operation."""
    now = timezone.now()
    fields = {
        "last_seen_at": now,
        "last_http_status": error.status_code,
        "last_message": error.gateway_message[:300],
        "last_reference": reference[:64],
    }
    for _ in range(3):
        with transaction.atomic():
            updated = GatewayIncident.objects.filter(
                operation=operation, resolved_at__isnull=True
            ).update(failures=F("failures") + 1, **fields)
            if updated:
                incident = GatewayIncident.objects.get(
                    operation=operation, resolved_at__isnull=True
                )
                break
            try:
                with transaction.atomic():
                    incident = GatewayIncident.objects.create(operation=operation, **fields)
                break
            except IntegrityError:
                continue  # another process opened it first: count on that one
    else:
        raise RuntimeError(f"could not record the {operation} incident")
    logger.error(
        "paystack refused our %s (merchant side, not the buyer's fault): HTTP %s %r "
        "reference=%s; incident %s has %d failure(s)",
        operation,
        error.status_code,
        error.gateway_message,
        reference,
        incident.pk,
        incident.failures,
    )
    return incident


# Every payment start sends it: written once, not compiled per call.
_RESOLVE_SQL = (
    f"UPDATE {GatewayIncident._meta.db_table} SET resolved_at = %s "  # noqa: S608
    "WHERE operation = %s AND resolved_at IS NULL RETURNING id"
)


def gateway_incident_resolve(*, operation: str) -> int:
    """The operation succeeded: its open incident (if any) is over. One
    indexed UPDATE; returns how many rows it closed (0 or 1)."""
    sql, params = gateway_incident_resolve_statement(operation=operation)
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        closed: int = cursor.rowcount
    gateway_incident_resolved(operation=operation, closed=closed)
    return closed


def gateway_incident_resolve_statement(*, operation: str) -> tuple[str, list[Any]]:
    """``gateway_incident_resolve``'s UPDATE (SQL and parameters, RETURNING a
    row per incident closed), for a caller that sends it with another
    statement; it then reports what it closed (``gateway_incident_resolved``)."""
    return _RESOLVE_SQL, [timezone.now(), operation]


def gateway_incident_resolved(*, operation: str, closed: int) -> None:
    if closed:
        logger.warning("paystack accepts our %s again: incident resolved", operation)


def gateway_incident_open(*, operation: str) -> GatewayIncident | None:
    return GatewayIncident.objects.filter(operation=operation, resolved_at__isnull=True).first()
