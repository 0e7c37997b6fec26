"""Reserved seating in a claim: the seats a customer chose (checked for
shape), the claim's transaction that takes them exactly or as the best
available, and the refusal that names the seats that are taken."""

from __future__ import annotations

import uuid

from django.db import IntegrityError, transaction

from claims.models import Claim
from claims.selectors import already_claimed
from claims.services.refusals import refuse_admission, refuse_short
from claims.services.tickets import claim_insert, is_one_purchase_violation
from events.selectors import TierSnapshot
from fairqueue.errors import Conflict, ErrorCode, InvalidInput
from fairqueue.locks import pg_lock_timeout
from inventory.seating.domain import SeatChange, SeatStatus
from inventory.seating.seatmap import seats_changed_on_commit
from inventory.seating.selectors import seats_not_free, seats_unknown
from inventory.seating.services import (
    SeatsTaken,
    seats_assign,
    seats_lock,
    seats_lock_best,
)
from inventory.services import ShortOfTickets
from queueing.services import queue_entry_complete


def chosen_seats(tier: TierSnapshot, seats: list[str] | None) -> tuple[str, ...]:
    """The labels a customer chose, checked for shape (not for existence:
    the claim's transaction tells unknown seats apart when it fails)."""
    if seats is None:
        return ()
    if not tier.reserved:
        raise InvalidInput(
            "This tier has no seats to choose; give a quantity.",
            code=ErrorCode.NOT_RESERVED_SEATING,
            details={"tier_id": str(tier.id)},
        )
    labels = tuple(label.strip() for label in seats)
    if not labels or len(set(labels)) != len(labels) or not all(labels):
        raise InvalidInput(
            "Choose at least one seat, each once.",
            code=ErrorCode.INVALID_QUANTITY,
            details={"seats": list(seats), "max": tier.max_tickets_per_customer},
        )
    return labels


def claim_seats_take(claim: Claim, *, quantity: int, reservation_id: str) -> int:
    """The inserted claim takes its chosen seats, or the best available
    (then written on the claim). The claim row comes first, seats after in
    id order: every claim locks in the same order (no deadlock), and a seat
    held by a claim in flight is waited for, no longer than the lock timeout
    (then 503 busy), so a refusal names exactly the seats that are taken."""
    with pg_lock_timeout():
        if claim.seats:
            labels = seats_lock(tier_id=claim.tier_id, labels=claim.seats)
        else:
            labels = seats_lock_best(tier_id=claim.tier_id, quantity=quantity)
            Claim.objects.filter(pk=claim.pk).update(seats=labels)
            claim.seats = labels
        seats_assign(
            tier_id=claim.tier_id, claim_id=claim.pk, labels=labels, reservation_id=reservation_id
        )
    return len(labels)


def refuse_taken_seats(
    tier: TierSnapshot, seats: tuple[str, ...], *, not_got: tuple[str, ...] | list[str] = ()
) -> None:
    """The chosen seats could not all be had: 422 seat_not_found for labels
    that name no seat, else 409 seats_unavailable naming the taken ones
    (held, sold, blocked, or locked by a claim in flight). Returns only when
    Postgres shows every seat free (Redis was wrong: try again)."""
    unknown = seats_unknown(tier_id=tier.id, labels=seats)
    if unknown:
        raise InvalidInput(
            "No such seat in this tier.", code=ErrorCode.SEAT_NOT_FOUND, details={"seats": unknown}
        )
    taken = sorted(set(seats_not_free(tier_id=tier.id, labels=seats)) | set(not_got))
    if taken:
        raise Conflict(
            "Some of the chosen seats are taken.",
            code=ErrorCode.SEATS_UNAVAILABLE,
            details={"seats": taken},
        )


class _AdmissionUsed(Exception):
    """The queue entry was no longer ADMITTED with its window open."""


def claim_insert_seats(
    claim: Claim,
    *,
    tier: TierSnapshot,
    entry_id: uuid.UUID | str,
    reservation_id: str,
    chosen: tuple[str, ...],
) -> Claim:
    """A reserved tier's claim in one transaction: the queue entry COMPLETED
    first (an admission that is gone locks no seat), then the claim row, then
    its seats locked in id order and taken (``claim_seats_take``). Any refusal
    rolls it all back; chosen seats that are taken are named (409
    seats_unavailable)."""
    try:
        with transaction.atomic():
            if not queue_entry_complete(entry_id=entry_id):
                raise _AdmissionUsed
            claim_insert(claim)
            if claim_seats_take(claim, quantity=claim.quantity, reservation_id=reservation_id) < (
                claim.quantity
            ):
                raise ShortOfTickets
    except IntegrityError as exc:
        if is_one_purchase_violation(exc):
            raise already_claimed(event_id=tier.event_id, customer_id=claim.customer_id) from exc
        raise
    except _AdmissionUsed:
        refuse_admission(tier, claim.customer_id)
    except (ShortOfTickets, SeatsTaken) as exc:
        if chosen:
            refuse_taken_seats(tier, chosen, not_got=getattr(exc, "labels", ()))
        refuse_short(tier, claim.quantity, customer_id=claim.customer_id)
    seats_changed_on_commit(
        event_id=tier.event_id,
        tier_id=tier.id,
        changes=[SeatChange(label, SeatStatus.HELD) for label in claim.seats],
    )
    return claim
