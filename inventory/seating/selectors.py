"""Reads of reserved seating, Postgres truth: which labels name seats, which
seats are free, the seats best available ranks, and every seat of a tier
with its status (what the seat map is rendered from)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django.db import connection

from inventory.models import Ticket
from inventory.seating.domain import Seat, SeatStatus
from inventory.services import TABLE

_FREE_SQL = f"""
SELECT label FROM {TABLE}
WHERE tier_id = %s AND label IS NOT NULL AND claim_id IS NULL AND NOT blocked"""  # noqa: S608
_FREE_AMONG_SQL = f"{_FREE_SQL} AND label = ANY(%s)"


def seats_unknown(*, tier_id: uuid.UUID, labels: Sequence[str]) -> list[str]:
    """The labels that name no seat of the tier."""
    known = set(
        Ticket.objects.filter(tier_id=tier_id, label__in=list(labels)).values_list(
            "label", flat=True
        )
    )
    return sorted(set(labels) - known)


def seats_not_free(*, tier_id: uuid.UUID, labels: Sequence[str]) -> list[str]:
    """Of these labels, the seats held by a claim or blocked (committed truth;
    a seat locked by a claim in flight still counts as free here)."""
    free = set(
        Ticket.objects.filter(
            tier_id=tier_id, label__in=list(labels), claim__isnull=True, blocked=False
        ).values_list("label", flat=True)
    )
    return sorted(set(labels) - free)


def tier_seats(*, tier_id: uuid.UUID) -> list[Seat]:
    """The tier's seats that can be sold (blocked seats left out)."""
    rows = Ticket.objects.filter(tier_id=tier_id, label__isnull=False, blocked=False).values_list(
        "label", "section", "row", "number", "x", "y", "accessible", "restricted_view"
    )
    return [
        Seat(label or "", section or "", row or "", number or 0, x, y, accessible, restricted)
        for label, section, row, number, x, y, accessible, restricted in rows
    ]


def seats_free(*, tier_id: uuid.UUID, labels: Sequence[str] | None = None) -> set[str]:
    """Labels of the tier's free seats (of ``labels`` only, when given)."""
    if labels is not None:
        with connection.cursor() as cursor:
            cursor.execute(_FREE_AMONG_SQL, [tier_id, list(labels)])
            return {row[0] for row in cursor.fetchall()}
    with connection.cursor() as cursor:
        cursor.execute(_FREE_SQL, [tier_id])
        return {row[0] for row in cursor.fetchall()}


def tier_seat_statuses(*, tier_id: uuid.UUID, sold_claim_status: str) -> list[dict[str, Any]]:
    """Postgres truth: every seat of the tier with its status, in map order."""
    rows = (
        Ticket.objects.filter(tier_id=tier_id, label__isnull=False)
        .order_by("id")
        .values_list(
            "label",
            "section",
            "row",
            "number",
            "x",
            "y",
            "blocked",
            "claim__status",
            "accessible",
            "restricted_view",
        )
    )
    seats = []
    for label, section, row, number, x, y, blocked, claim_status, accessible, restricted in rows:
        if blocked:
            status = SeatStatus.BLOCKED
        elif claim_status is None:
            status = SeatStatus.AVAILABLE
        elif claim_status == sold_claim_status:
            status = SeatStatus.SOLD
        else:
            status = SeatStatus.HELD
        seats.append(
            {
                "label": label,
                "section": section or "",
                "row": row or "",
                "number": number,
                "x": _compact(x),
                "y": _compact(y),
                "status": status.value,
                "accessible": accessible,
                "restricted_view": restricted,
            }
        )
    return seats


def _compact(value: float | None) -> float | int | None:
    return int(value) if value is not None and value.is_integer() else value
