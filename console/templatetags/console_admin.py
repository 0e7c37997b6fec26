"""Template tags of the admin's pages: what a staff member must see before
an action they cannot take back."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import template

from claims.domain import IssuedTicketStatus, ticket_code_display
from claims.models import IssuedTicket

register = template.Library()


@register.simple_tag
def checked_in_tickets(payments: Iterable[Any]) -> list[dict[str, Any]]:
    """The tickets of these payments' orders that were already checked in
    at the door: a refund voids them while their holders are inside."""
    by_claim = {}
    for row in payments:
        payment = row[0] if isinstance(row, tuple | list) else row
        by_claim[payment.claim_id] = payment
    used = IssuedTicket.objects.filter(
        claim_id__in=list(by_claim), status=IssuedTicketStatus.USED
    ).order_by("checked_in_at")
    return [
        {
            "reference": by_claim[t.claim_id].reference,
            "code": ticket_code_display(t.code),
            "holder": t.holder_email,
            "checked_in_at": t.checked_in_at,
        }
        for t in used
    ]
