"""What a purchase's account says, in lines a buyer or staff can read: its
money in short (``Money``), its refunds, and every entry in words."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from ledger.domain import KIND_LABELS, EntryKind, Money, money_of
from ledger.models import AccountEntry
from ledger.services import account_balance

_REFUND_STATUS = {
    EntryKind.REFUND_SETTLED: "processed",
    EntryKind.REFUND_OUTSIDE: "processed",
    EntryKind.REFUND_FAILED: "failed",
}


@dataclass(frozen=True)
class RefundLine:
    refund_id: str | None
    amount: int
    status: str  # pending, processed or failed
    reason: str
    created_at: datetime


@dataclass(frozen=True)
class EntryLine:
    kind: str
    label: str
    amount: int
    currency: str
    tickets: int
    note: str
    actor: str
    created_at: datetime


def account_money(*, claim_id: uuid.UUID | str, face: int) -> Money:
    return money_of(account_balance(claim_id=claim_id, face=face))


def account_refunds(*, claim_id: uuid.UUID | str) -> list[RefundLine]:
    """Each refund of the purchase once, oldest first, with where it stands:
    asked for (pending), paid back (processed) or failed; a refund made
    outside FairQueue and recorded as done is processed from the start."""
    lines: dict[str, RefundLine] = {}
    entries = AccountEntry.objects.filter(claim_id=claim_id).order_by("id")
    for entry in entries:
        key = str(entry.refund_id) if entry.refund_id else f"entry:{entry.pk}"
        if entry.kind == EntryKind.REFUND_ASKED or (
            entry.kind == EntryKind.REFUND_OUTSIDE and key not in lines
        ):
            lines[key] = RefundLine(
                refund_id=str(entry.refund_id) if entry.refund_id else None,
                amount=entry.amount,
                status=_REFUND_STATUS.get(EntryKind(entry.kind), "pending"),
                reason=entry.note,
                created_at=entry.created_at,
            )
        elif entry.refund_id and key in lines and entry.kind in _REFUND_STATUS:
            old = lines[key]
            settled = entry.amount if entry.kind == EntryKind.REFUND_SETTLED else old.amount
            lines[key] = RefundLine(
                old.refund_id, settled, _REFUND_STATUS[EntryKind(entry.kind)], old.reason,
                old.created_at,
            )  # fmt: skip
    return list(lines.values())


def account_lines(*, claim_id: uuid.UUID | str) -> list[EntryLine]:
    """Every entry of the purchase's account, in words, oldest first."""
    return [
        EntryLine(
            kind=entry.kind,
            label=KIND_LABELS[EntryKind(entry.kind)],
            amount=entry.amount,
            currency=entry.currency,
            tickets=entry.tickets,
            note=entry.note,
            actor=entry.actor,
            created_at=entry.created_at,
        )
        for entry in AccountEntry.objects.filter(claim_id=claim_id).order_by("id")
    ]
