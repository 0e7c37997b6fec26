"""Claiming tickets: admission check, Redis lock and counter, then one
Postgres transaction that is the only door trusted (invariant 1).

Redis only turns most losers away early. Its answers are never final on
their own: a "not enough" is checked against Postgres before it becomes a
410, and with Redis unreachable the claim goes through the Postgres guard
alone (slower, still exact: the ticket rows and the one-purchase index decide,
as they always do)."""

from __future__ import annotations

import logging
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from claims.domain import ClaimStatus
from claims.models import Claim
from claims.selectors import already_claimed, customer_holds_purchase
from claims.services.after_sale import claim_insert_after_sale, offer_claims_after_sale
from claims.services.refusals import (
    mark_sold_out_if_none_left,
    refuse_admission,
    refuse_more_than_left,
    refuse_short,
)
from claims.services.seating import chosen_seats, claim_insert_seats, refuse_taken_seats
from claims.services.tickets import (
    claim_insert,
    claim_insert_admitted,
    is_one_purchase_violation,
)
from events.domain import is_on_sale
from events.models import Event
from events.selectors import TierSnapshot, tier_snapshot
from fairqueue.errors import Busy, Conflict, ErrorCode, Forbidden, InvalidInput, NotFound
from fairqueue.faults import fault_point
from fairqueue.locks import release_token
from fairqueue.metrics import CLAIMS, counted
from fairqueue.redis import event_key
from inventory.selectors import tier_free_tickets
from inventory.services import inventory_sync_event
from inventory.store import InventoryStore, Reservation, inventory_store
from queueing.services import (
    admission_clock_stop,
    admission_slot,
    queue_entry_complete,
)
from queueing.tokens import admission_scope_check, admission_token_read

logger = logging.getLogger(__name__)

# Test-only switch. Off, a claim is inserted without taking ticket rows: it
# trusts the Redis counter, as the seed design did. The concurrency tests turn
# it off to show the oversell the Postgres guard prevents, then leave it on to
# show the guard holding. Never off outside those tests.
TICKET_GUARD = True

# What InventoryStore.reserve answers besides the count left.
CACHE_MISS, NOT_ENOUGH, LOCKED = -1, -2, -3

# Postgres is asked whether the event just sold out only when the Redis
# counter says few tickets are left: the claim committing last is one of the
# last reservations, as long as fewer claims than this are in flight at once.
# (With Redis inflated, reconciliation flips the status instead.)
SOLD_OUT_CHECK_BELOW = 64


# The codes claim_create refuses with (its docstring), each counted from zero.
CLAIM_REFUSALS = (
    ErrorCode.EVENT_NOT_FOUND, ErrorCode.TIER_NOT_FOUND, ErrorCode.INVALID_QUANTITY,
    ErrorCode.SEAT_NOT_FOUND, ErrorCode.NOT_RESERVED_SEATING, ErrorCode.EVENT_NOT_ON_SALE,
    ErrorCode.INVALID_TOKEN, ErrorCode.ADMISSION_INVALID, ErrorCode.ADMISSION_EXPIRED,
    ErrorCode.ALREADY_CLAIMED, ErrorCode.CLAIM_IN_PROGRESS, ErrorCode.SEATS_UNAVAILABLE,
    ErrorCode.NOT_ENOUGH_TICKETS, ErrorCode.SOLD_OUT, ErrorCode.BUSY,
)  # fmt: skip


@counted(CLAIMS, "created", expected=CLAIM_REFUSALS)
def claim_create(
    *,
    event_id: uuid.UUID | str,
    customer_id: uuid.UUID | str,
    admission_token: str,
    tier_id: uuid.UUID | str,
    quantity: int | None = None,
    seats: list[str] | None = None,
) -> Claim:
    """Claim ``quantity`` tickets of a tier for an admitted customer; on a
    reserved tier, exactly the ``seats`` (labels) chosen, all or nothing, or
    with ``quantity`` alone the best available seats (``inventory.seating.domain``).
    Once the sale is over, while returns are open, only the admission of a
    waiting-list offer claims, a ticket on resale (``after_sale``).

    Errors: 404 event_not_found; 422 tier_not_found / invalid_quantity /
    seat_not_found / not_reserved_seating; 409 event_not_on_sale; 401/403
    from the admission check; 409 already_claimed / claim_in_progress /
    seats_unavailable (details.seats: the chosen seats that are taken) /
    not_enough_tickets (fewer left than asked for; details.available: how
    many); 410 sold_out (none left); 503 busy (tickets held by claims still in flight, or Redis
    unavailable)."""
    tier = _tier_of_event(event_id=event_id, tier_id=tier_id)
    labels = chosen_seats(tier, seats)
    if labels:
        quantity = len(labels)
    if quantity is None:
        raise InvalidInput(
            "Give a quantity, or the seats you chose.",
            code=ErrorCode.INVALID_QUANTITY,
            details={"quantity": None, "max": tier.max_tickets_per_customer},
        )
    if quantity < 1 or quantity > tier.max_tickets_per_customer:
        raise InvalidInput(
            f"The quantity must be between 1 and {tier.max_tickets_per_customer}.",
            code=ErrorCode.INVALID_QUANTITY,
            details={"quantity": quantity, "max": tier.max_tickets_per_customer},
        )
    on_sale = is_on_sale(
        status=tier.event_status,
        now=timezone.now(),
        sale_start=tier.sale_start,
        sale_end=tier.sale_end,
    )
    # The token's signature and whose it is; whether the admission is still
    # good (ADMITTED, window open) is checked by the claim statement itself,
    # which is the authority anyway: no Redis or Postgres read before it.
    if not on_sale and tier.returns_until is None:
        raise Conflict("This event is not on sale.", code=ErrorCode.EVENT_NOT_ON_SALE)
    admission = admission_token_read(
        token=admission_token, event_id=tier.event_id, customer_id=customer_id
    )
    if not on_sale and not offer_claims_after_sale(tier, admission):
        raise Conflict("This event is not on sale.", code=ErrorCode.EVENT_NOT_ON_SALE)
    admission_scope_check(admission, tier_id=tier.id, quantity=quantity)
    if not on_sale:
        return claim_insert_after_sale(
            _claim_new(
                tier,
                entry_id=admission.queue_entry_id,
                customer_id=customer_id,
                quantity=quantity,
                seats=labels,
            ),
            tier=tier,
            entry_id=admission.queue_entry_id,
            chosen=labels,
        )

    # One round trip takes the (event, customer) lock and reserves the
    # tickets in Redis; the lock is ours from here until the last Redis write.
    store = inventory_store()
    lock = ClaimLock(claim_lock_key(tier.event_id, customer_id))
    answer = store.reserve(
        event_id=tier.event_id,
        tier_id=tier.id,
        quantity=quantity,
        lock_key=lock.key,
        lock_token=lock.token,
        lock_ttl_ms=CLAIM_LOCK_TTL_MS,
    )
    if answer is None:
        return _claim_without_redis(
            tier=tier,
            entry_id=admission.queue_entry_id,
            customer_id=customer_id,
            quantity=quantity,
            seats=labels,
        )
    left, reservation = answer
    if left == LOCKED:
        if customer_holds_purchase(event_id=tier.event_id, customer_id=customer_id):
            raise already_claimed(event_id=tier.event_id, customer_id=customer_id)
        raise Conflict(
            "A claim of yours for this event is being processed.",
            code=ErrorCode.CLAIM_IN_PROGRESS,
            retry_after=1,
        )
    reserved: Reservation | None = None
    try:
        if left in (CACHE_MISS, NOT_ENOUGH):
            answer = _reserve_again(
                store,
                tier=tier,
                quantity=quantity,
                left=left,
                seats=labels,
                customer_id=customer_id,
            )
            if answer is None:  # Redis went away meanwhile: Postgres alone
                _finish_quietly(store, None, give_back=True, lock=lock)
                return _claim_without_redis(
                    tier=tier,
                    entry_id=admission.queue_entry_id,
                    customer_id=customer_id,
                    quantity=quantity,
                    seats=labels,
                )
            left, reservation = answer
        if left < 0:
            raise Busy("Tickets are being claimed right now; retry shortly.")
        reserved = reservation
        fault_point("claim_create.after_reserve")
        claim = _claim_insert(
            tier=tier,
            entry_id=admission.queue_entry_id,
            customer_id=customer_id,
            quantity=quantity,
            reservation_id=reserved.id,
            seats=labels,
        )
    except BaseException:
        # Not committed: the reserved tickets go back to the counter.
        _finish_quietly(store, reserved, give_back=True, lock=lock)
        raise
    # Committed. A crash from here on (the fault point stands in for one)
    # leaves the reservation for reconciliation, which finds its claim in
    # Postgres and does not count it twice; the lock expires by itself.
    fault_point("claim_create.after_commit")
    # One round trip: the reservation finished, the lock and the customer's
    # admission slot released.
    store.finish(
        reserved,
        give_back=False,
        lock_key=lock.key,
        lock_token=lock.token,
        also_remove=admission_slot(event_id=tier.event_id, customer_id=customer_id),
    )
    if left < SOLD_OUT_CHECK_BELOW:
        mark_sold_out_if_none_left(tier.event_id)
    return claim


def _claim_without_redis(
    *,
    tier: TierSnapshot,
    entry_id: uuid.UUID | str,
    customer_id: uuid.UUID | str,
    quantity: int,
    seats: tuple[str, ...] = (),
) -> Claim:
    """Redis is unreachable: no counter, no per-customer lock, the Postgres
    transaction decides alone. Two claims of one customer meet at the
    one-purchase index and at the conditional COMPLETED of the queue entry;
    the ticket rows, taken with SKIP LOCKED, refuse an oversell as always.
    The admission clock of the event stops (the waiting room is degraded:
    customers may miss their admission push), and starts again, giving the
    time back, once a tick finds Redis again."""
    admission_clock_stop(event_id=tier.event_id)
    claim = _claim_insert(
        tier=tier,
        entry_id=entry_id,
        customer_id=customer_id,
        quantity=quantity,
        reservation_id="",
        seats=seats,
    )
    mark_sold_out_if_none_left(tier.event_id)
    return claim


# The (event, customer) claim lock: taken by the reserve script in the same
# round trip as the tickets. Longer than any claim takes; a crashed
# claimer's lock frees itself.
CLAIM_LOCK_TTL_MS = 10_000


def claim_lock_key(event_id: object, customer_id: object) -> str:
    return event_key(event_id, "claim-lock", customer_id)


@dataclass(frozen=True)
class ClaimLock:
    key: str
    token: str = field(default_factory=lambda: secrets.token_hex(16))


def _tier_of_event(*, event_id: uuid.UUID | str, tier_id: uuid.UUID | str) -> TierSnapshot:
    tier = tier_snapshot(tier_id=tier_id)
    if tier is not None and str(tier.event_id) == str(event_id):
        return tier
    if not Event.objects.filter(pk=event_id).exists():
        raise NotFound("No such event.", code=ErrorCode.EVENT_NOT_FOUND)
    raise InvalidInput(
        "No such ticket tier for this event.",
        code=ErrorCode.TIER_NOT_FOUND,
        details={"tier_id": str(tier_id)},
    )


def _reserve_again(
    store: InventoryStore,
    *,
    tier: TierSnapshot,
    quantity: int,
    left: int,
    seats: tuple[str, ...] = (),
    customer_id: uuid.UUID | str | None = None,
) -> tuple[int, Reservation] | None:
    """Redis had no counter (it was wiped) or said "not enough": neither is
    final. Postgres is asked; when it has fewer free tickets than asked for
    the answer is final: how many it has (409), or 410 when none. Otherwise
    the counter is brought back to Postgres truth and the reservation tried
    once more (the lock is already ours): a second
    "not enough" means the free rows are held by claims in flight, which may
    still roll back, so it is "busy, retry". None: Redis went away."""
    if left == NOT_ENOUGH and seats:
        refuse_taken_seats(tier, seats)
    elif left == NOT_ENOUGH:
        free = tier_free_tickets(tier_id=tier.id)
        if free < quantity:
            refuse_more_than_left(tier, free, customer_id=customer_id)
    inventory_sync_event(event_id=tier.event_id, tier_ids=[tier.id])
    answer = store.reserve(event_id=tier.event_id, tier_id=tier.id, quantity=quantity)
    if answer is not None and answer[0] == NOT_ENOUGH and left == CACHE_MISS:
        # The rebuilt counter says none: ask Postgres, as for any "not enough".
        return _reserve_again(
            store,
            tier=tier,
            quantity=quantity,
            left=NOT_ENOUGH,
            seats=seats,
            customer_id=customer_id,
        )
    return answer


def _finish_quietly(
    store: InventoryStore, reservation: Reservation | None, *, give_back: bool, lock: ClaimLock
) -> None:
    """Finish the reservation (if one was made) and release the lock, in one
    round trip. Best effort: a Redis failure here is healed by reconciliation
    (the reservation) and by the lock's expiry."""
    if reservation is None:
        release_token(lock.key, lock.token)
    else:
        store.finish(reservation, give_back=give_back, lock_key=lock.key, lock_token=lock.token)


def _claim_insert(
    *,
    tier: TierSnapshot,
    entry_id: uuid.UUID | str,
    customer_id: uuid.UUID | str,
    quantity: int,
    reservation_id: str,
    seats: tuple[str, ...] = (),
) -> Claim:
    """The claim row with its ticket rows and the queue entry COMPLETED, all
    or nothing: on general admission in one statement
    (claims/services/tickets.py), on a reserved tier in one transaction that
    takes exactly ``seats``, or without them the best available seats.
    ``reservation_id`` names the Redis reservation that fronted the claim
    ("" when there was none)."""
    claim = _claim_new(
        tier, entry_id=entry_id, customer_id=customer_id, quantity=quantity, seats=seats
    )
    if not TICKET_GUARD:
        return _claim_insert_unguarded(claim, entry_id=entry_id)
    if tier.reserved:
        return claim_insert_seats(
            claim, tier=tier, entry_id=entry_id, reservation_id=reservation_id, chosen=seats
        )
    try:
        outcome = claim_insert_admitted(claim, entry_id=entry_id, reservation_id=reservation_id)
    except IntegrityError as exc:
        if is_one_purchase_violation(exc):
            raise already_claimed(event_id=tier.event_id, customer_id=customer_id) from exc
        raise
    if outcome.made(quantity):
        return claim
    if outcome.admitted and outcome.picked < quantity:
        refuse_short(tier, quantity, customer_id=customer_id)
    refuse_admission(tier, customer_id)


def _claim_new(
    tier: TierSnapshot,
    *,
    entry_id: uuid.UUID | str,
    customer_id: uuid.UUID | str,
    quantity: int,
    seats: tuple[str, ...],
) -> Claim:
    """The claim row, unsaved and fully filled in."""
    now = timezone.now()
    return Claim(
        id=uuid.uuid4(),
        event_id=tier.event_id,
        tier_id=tier.id,
        customer_id=customer_id,
        queue_entry_id=entry_id,
        quantity=quantity,
        amount=tier.price * quantity,
        currency=tier.currency,
        status=ClaimStatus.CLAIMED.value,
        expires_at=now + timedelta(seconds=settings.CLAIM_TTL_SECONDS),
        created_at=now,
        seats=list(seats),
    )


def _claim_insert_unguarded(claim: Claim, *, entry_id: uuid.UUID | str) -> Claim:
    """TICKET_GUARD off (the concurrency tests only): the claim without ticket
    rows, trusting the Redis counter as the seed design did."""
    try:
        with transaction.atomic():
            claim_insert(claim)
            if not queue_entry_complete(entry_id=entry_id):
                raise Forbidden("The admission has expired.", code=ErrorCode.ADMISSION_EXPIRED)
    except IntegrityError as exc:
        if is_one_purchase_violation(exc):
            raise already_claimed(event_id=claim.event_id, customer_id=claim.customer_id) from exc
        raise
    return claim
