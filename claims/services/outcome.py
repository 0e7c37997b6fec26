"""What a payment does to its claim: confirm it, or re-instate a released one
when a success arrives late (invariant 5). Both run inside the payments
transaction that records the payment's own change."""

from __future__ import annotations

import logging
import uuid

from django.db import IntegrityError, transaction
from django.utils import timezone

from claims.domain import CLAIM_MACHINE, ClaimStatus
from claims.models import Claim
from claims.services.issuing import (
    issued_tickets_after,
    issued_tickets_issue,
    issued_tickets_live,
    issued_tickets_make,
)
from claims.services.resold import resales_complete
from claims.services.tickets import is_one_purchase_violation
from events.services import event_mark_sold_out
from fairqueue.db import prepared_cursor
from fairqueue.errors import ErrorCode, InvalidTransition, NotFound
from fairqueue.locks import pg_lock_timeout
from inventory.seating.domain import SeatChange, SeatStatus
from inventory.seating.seatmap import seats_changed_on_commit
from inventory.seating.services import SeatsTaken, seats_take
from inventory.selectors import event_has_free_ticket
from inventory.services import TABLE as TICKETS
from inventory.services import ShortOfTickets, inventory_sync_event, tickets_take

logger = logging.getLogger(__name__)


# The confirmation in one prepared statement (the webhook's hot path): a
# claim confirmed has no payment in flight any more (the one that paid it).
# It also answers whether the claim holds a ticket returned for resale (that
# resale is then paid: ``resales_complete``), so a plain sale costs nothing more.
_CONFIRM_SQL = (
    f"UPDATE {Claim._meta.db_table} AS c SET status = %s, confirmed_at = %s, "  # noqa: S608
    "payment_in_flight = false WHERE id = %s AND status = %s "
    f"RETURNING EXISTS (SELECT 1 FROM {TICKETS} k WHERE k.claim_id = c.id "
    "AND k.resale_from_id IS NOT NULL)"
)


def claim_confirm(*, claim_id: uuid.UUID | str, claim: Claim | None = None) -> Claim:
    """CLAIMED -> CONFIRMED (conditional), and its tickets issued;
    InvalidTransition otherwise. ``claim``: the caller's locked row of it
    (``claim_lock``, its customer loaded), not read again.

    A claim past its expiry that the expiry task has not released yet still
    holds its tickets, so the payment arrived in time for them."""
    now = timezone.now()
    params = [ClaimStatus.CONFIRMED.value, now, claim_id, ClaimStatus.CLAIMED.value]
    issued: int | None = None
    if claim is not None and claim.status == ClaimStatus.CLAIMED:
        # The caller's row says it will move: its tickets go in the same statement.
        answer = issued_tickets_after(_CONFIRM_SQL, params, claim=claim)
        if answer is not None:
            issued = answer[1]
    else:
        with prepared_cursor() as cursor:
            cursor.execute(_CONFIRM_SQL, params)
            answer = cursor.fetchone()
    updated, on_resale = answer is not None, bool(answer and answer[0])
    if claim is None or not updated:
        claim = Claim.objects.select_related("customer").filter(pk=claim_id).first()
        if claim is None:
            raise NotFound("No such claim.", code=ErrorCode.CLAIM_NOT_FOUND)
    else:
        claim.status, claim.confirmed_at = ClaimStatus.CONFIRMED, now
        claim.payment_in_flight = False
    if not updated:
        raise InvalidTransition(
            f"A {claim.status} claim cannot be confirmed.",
            details={"from": claim.status, "to": ClaimStatus.CONFIRMED.value},
        )
    issued_tickets_make(claim, issued=issued)
    if on_resale:
        resales_complete(claim=claim, issued=issued_tickets_live(claim_id=claim.pk))
    _seats_sold(claim)
    return claim


def _seats_sold(claim: Claim) -> None:
    seats_changed_on_commit(
        event_id=claim.event_id,
        tier_id=claim.tier_id,
        changes=[SeatChange(label, SeatStatus.SOLD) for label in claim.seats],
    )


def claim_reinstate(*, claim_id: uuid.UUID | str) -> bool:
    """Make the claim CONFIRMED if it can be; False when it cannot (nothing
    changed: the payment must be refunded).

    RELEASED -> CONFIRMED takes the claim's tickets again through the same
    Postgres guard as a claim and respects one purchase per customer per
    event: False when the tickets are gone or the customer holds another
    purchase. An already CONFIRMED claim answers True (a repeated success); a
    CLAIMED one is confirmed. A refusal rolls back only its own savepoint, so
    the caller's transaction goes on."""
    claim = Claim.objects.filter(pk=claim_id).first()
    if claim is None:
        raise NotFound("No such claim.", code=ErrorCode.CLAIM_NOT_FOUND)
    if claim.status == ClaimStatus.CONFIRMED:
        return True
    if claim.status == ClaimStatus.CLAIMED:
        try:
            claim_confirm(claim_id=claim.pk)
            return True
        except InvalidTransition:
            pass  # released meanwhile: re-instate it below
    CLAIM_MACHINE.check(ClaimStatus.RELEASED, ClaimStatus.CONFIRMED)
    try:
        with transaction.atomic():
            updated = Claim.objects.filter(pk=claim.pk, status=ClaimStatus.RELEASED).update(
                status=ClaimStatus.CONFIRMED, confirmed_at=timezone.now()
            )
            if updated:
                _take_all(claim)
                issued_tickets_issue(claim_id=claim.pk)
                _seats_sold(claim)
    except IntegrityError as exc:
        if not is_one_purchase_violation(exc):
            raise
        logger.warning("claim %s not re-instated: the customer holds another purchase", claim.pk)
        return False
    except (ShortOfTickets, SeatsTaken):
        logger.warning("claim %s not re-instated: its tickets are gone", claim.pk)
        return False
    if not updated:
        # Someone else moved it first; only CONFIRMED is a success.
        status = Claim.objects.filter(pk=claim.pk).values_list("status", flat=True).first()
        return status == ClaimStatus.CONFIRMED
    transaction.on_commit(
        lambda: _inventory_after_reinstate(claim.event_id, claim.tier_id), robust=True
    )
    return True


def _take_all(claim: Claim) -> None:
    """The claim's tickets again, all or none (ShortOfTickets / SeatsTaken).

    Free rows no claim in flight holds are taken first, without waiting.
    When those are too few, rows that claims in flight hold are waited for
    (a rare path), no longer than the lock timeout (then the webhook is
    answered 503 and the gateway delivers it again); the first pass is
    given back before that wait, which locks in ascending id. A re-instate
    that waited while holding rows could hold the very rows another
    re-instate waits for while waiting for that one's: a deadlock."""
    with pg_lock_timeout():
        if claim.seats:  # a reserved tier: the same seats (locked in id order), or none
            seats_take(tier_id=claim.tier_id, claim_id=claim.pk, labels=claim.seats)
            return
        first_pass = transaction.savepoint()
        taken = tickets_take(
            tier_id=claim.tier_id, claim_id=claim.pk, quantity=claim.quantity, skip_locked=True
        )
        if taken == claim.quantity:
            transaction.savepoint_commit(first_pass)
            return
        transaction.savepoint_rollback(first_pass)  # its rows and their locks go back
        taken = tickets_take(
            tier_id=claim.tier_id, claim_id=claim.pk, quantity=claim.quantity, skip_locked=False
        )
    if taken < claim.quantity:
        raise ShortOfTickets


def _inventory_after_reinstate(event_id: uuid.UUID, tier_id: uuid.UUID) -> None:
    """The tickets were taken without a Redis reservation: bring the counter
    down to truth now rather than at the next reconciliation (which heals it
    if Redis is unreachable now)."""
    inventory_sync_event(event_id=event_id, tier_ids=[tier_id])
    if not event_has_free_ticket(event_id=event_id):
        event_mark_sold_out(event_id=event_id)
