"""The close of returns: a return still on resale when its event's
``returns_until`` passes goes back to its holder (the ticket VALID again,
its row out of the resale inventory), once, and the holder is told
(``ticket_return_closed``). The beat runs it (``claims.tasks.returns_close``)."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from claims.domain import ClaimStatus, ReturnStatus
from claims.models import TicketReturn
from claims.services.payments import claim_lock
from claims.services.resale import return_take_back
from claims.signals import ticket_return_closed
from fairqueue.errors import Busy
from fairqueue.locks import pg_lock_timeout
from fairqueue.news import send_on_commit

logger = logging.getLogger(__name__)

# Returns one run takes back at most (the next run, one expiry interval
# later, takes the rest).
BATCH = 500


@dataclass
class ReturnsClosed:
    closed: list[str] = field(default_factory=list)  # returns taken back
    held: list[str] = field(default_factory=list)  # a buyer's claim holds the ticket


def returns_close_due(*, now: datetime | None = None) -> ReturnsClosed:
    """Every return still ON_RESALE whose event's returns closed is taken
    back (``return_take_back``, the system's step ``return_closed``). One
    whose ticket a buyer's claim holds at that moment is left: the buyer's
    payment resells it, or their claim ends, the ticket is free on resale
    again and the next run takes it back. Safe to re-run, and to run
    concurrently (each return under its purchase's row lock)."""
    now = now or timezone.now()
    report = ReturnsClosed()
    due = TicketReturn.objects.filter(
        status=ReturnStatus.ON_RESALE, event__returns_until__lte=now
    ).values_list("pk", "claim_id")[:BATCH]
    for return_id, claim_id in list(due):
        try:
            outcome = _close_one(return_id, claim_id)
        except Busy:
            logger.info("returns close: return %s busy, taken back on the next run", return_id)
            continue
        if outcome is not None:
            getattr(report, outcome).append(str(return_id))
    if report.closed or report.held:
        logger.info(
            "returns closed: taken back=%s held by a buyer=%s", len(report.closed), len(report.held)
        )
    return report


def _close_one(return_id: uuid.UUID, claim_id: uuid.UUID) -> str | None:
    """ "closed", "held", or None when it ended meanwhile (resold, withdrawn
    by its holder, its purchase cancelled)."""
    with transaction.atomic(), pg_lock_timeout():
        claim = claim_lock(claim_id=claim_id)
        ret = TicketReturn.objects.filter(pk=return_id, status=ReturnStatus.ON_RESALE).first()
        if ret is None or claim.status != ClaimStatus.CONFIRMED:
            return None
        if not return_take_back(ret, claim, actor="system", closed=True):
            return "held"
        send_on_commit(ticket_return_closed, sender=TicketReturn, return_id=ret.pk)
    return "closed"
