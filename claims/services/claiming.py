"""Claiming tickets: admission check, Redis lock and counter, then one
Postgres transaction that is the only door trusted (invariant 1)."""

from __future__ import annotations

import logging
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

import redis
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from claims.domain import ClaimStatus
from claims.models import Claim
from claims.selectors import TierSnapshot, already_claimed, customer_holds_purchase, tier_snapshot
from claims.services.tickets import claim_insert, is_one_purchase_violation
from events.domain import is_on_sale
from events.models import Event
from events.services import event_mark_sold_out
from fairqueue.errors import Busy, Conflict, ErrorCode, Forbidden, Gone, InvalidInput, NotFound
from fairqueue.faults import fault_point
from fairqueue.locks import release_token
from fairqueue.metrics import CLAIMS, counted
from fairqueue.redis import event_key
from inventory.selectors import event_has_free_ticket, tier_free_tickets
from inventory.services import ShortOfTickets, inventory_sync_event
from inventory.store import InventoryStore, Reservation, inventory_store
from queueing.services import admission_slot_release, admission_verify, queue_entry_complete

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


@counted(CLAIMS, "created")
def claim_create(
    *,
    event_id: uuid.UUID | str,
    customer_id: uuid.UUID | str,
    admission_token: str,
    tier_id: uuid.UUID | str,
    quantity: int,
) -> Claim:
    """Claim ``quantity`` tickets of a tier for an admitted customer.

    Errors: 404 event_not_found; 422 tier_not_found / invalid_quantity;
    409 event_not_on_sale; 401/403 from the admission check; 409
    already_claimed / claim_in_progress; 410 sold_out; 503 busy (tickets held
    by claims still in flight, or Redis unavailable)."""
    tier = _tier_of_event(event_id=event_id, tier_id=tier_id)
    if quantity < 1 or quantity > tier.max_tickets_per_customer:
        raise InvalidInput(
            f"The quantity must be between 1 and {tier.max_tickets_per_customer}.",
            code=ErrorCode.INVALID_QUANTITY,
            details={"quantity": quantity, "max": tier.max_tickets_per_customer},
        )
    if not is_on_sale(
        status=tier.event_status,
        now=timezone.now(),
        sale_start=tier.sale_start,
        sale_end=tier.sale_end,
    ):
        raise Conflict("This event is not on sale.", code=ErrorCode.EVENT_NOT_ON_SALE)
    try:
        entry = admission_verify(
            token=admission_token, event_id=tier.event_id, customer_id=customer_id
        )
    except Forbidden as exc:
        # The admission was used up by this customer's own successful claim.
        if exc.code == ErrorCode.ADMISSION_EXPIRED and customer_holds_purchase(
            event_id=tier.event_id, customer_id=customer_id
        ):
            raise already_claimed(event_id=tier.event_id, customer_id=customer_id) from exc
        raise

    # One round trip takes the (event, customer) lock and reserves the
    # tickets in Redis; the lock is ours from here until the last Redis write.
    store = inventory_store()
    lock = ClaimLock(claim_lock_key(tier.event_id, customer_id))
    try:
        left, reservation = store.reserve(
            event_id=tier.event_id,
            tier_id=tier.id,
            quantity=quantity,
            lock_key=lock.key,
            lock_token=lock.token,
            lock_ttl_ms=CLAIM_LOCK_TTL_MS,
        )
    except redis.RedisError as exc:
        raise Busy("Claims are briefly unavailable; retry shortly.") from exc
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
        if left == CACHE_MISS:
            left, reservation = _reserve_after_rebuild(store, tier=tier, quantity=quantity)
        if left == NOT_ENOUGH:
            raise Gone("Sold out.", code=ErrorCode.SOLD_OUT)
        if left < 0:
            raise Busy("Ticket inventory is being rebuilt; retry shortly.")
        reserved = reservation
        fault_point("claim_create.after_reserve")
        claim = _claim_insert(
            tier=tier,
            entry_id=entry.pk,
            customer_id=customer_id,
            quantity=quantity,
            reservation=reserved,
        )
    except BaseException:
        # Not committed: the reserved tickets go back to the counter.
        _finish_quietly(store, reserved, give_back=True, lock=lock)
        raise
    # Committed. A crash from here on (the fault point stands in for one)
    # leaves the reservation for reconciliation, which finds its claim in
    # Postgres and does not count it twice; the lock expires by itself.
    fault_point("claim_create.after_commit")
    _finish_quietly(store, reserved, give_back=False, lock=lock)
    admission_slot_release(event_id=tier.event_id, customer_id=customer_id)
    if left < SOLD_OUT_CHECK_BELOW:
        _mark_sold_out_if_none_left(tier.event_id)
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


def _reserve_after_rebuild(
    store: InventoryStore, *, tier: TierSnapshot, quantity: int
) -> tuple[int, Reservation]:
    """The counter was missing (Redis wiped): rebuild it from Postgres truth
    and try once more (the lock is already ours)."""
    try:
        inventory_sync_event(event_id=tier.event_id, tier_ids=[tier.id])
        return store.reserve(event_id=tier.event_id, tier_id=tier.id, quantity=quantity)
    except redis.RedisError as exc:
        raise Busy("Ticket inventory is briefly unavailable; retry shortly.") from exc


def _mark_sold_out_if_none_left(event_id: uuid.UUID | str) -> None:
    if not event_has_free_ticket(event_id=event_id):
        event_mark_sold_out(event_id=event_id)


def _finish_quietly(
    store: InventoryStore, reservation: Reservation | None, *, give_back: bool, lock: ClaimLock
) -> None:
    """Finish the reservation (if one was made) and release the lock, in one
    round trip. A Redis failure here is healed by reconciliation (the
    reservation) and by the lock's expiry."""
    try:
        if reservation is None:
            release_token(lock.key, lock.token)
        else:
            store.finish(reservation, give_back=give_back, lock_key=lock.key, lock_token=lock.token)
    except redis.RedisError:
        logger.warning("claim cleanup in redis failed; reconciliation heals it")


def _claim_insert(
    *,
    tier: TierSnapshot,
    entry_id: uuid.UUID | str,
    customer_id: uuid.UUID | str,
    quantity: int,
    reservation: Reservation,
) -> Claim:
    """One transaction: the claim row with its ticket rows, then the queue
    entry COMPLETED. Any refusal rolls both back."""
    now = timezone.now()
    claim = Claim(
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
    )
    try:
        with transaction.atomic():
            taken = claim_insert(claim, reservation_id=reservation.id, take_tickets=TICKET_GUARD)
            if TICKET_GUARD and taken < quantity:
                raise ShortOfTickets
            if not queue_entry_complete(entry_id=entry_id):
                raise Forbidden("The admission has expired.", code=ErrorCode.ADMISSION_EXPIRED)
    except IntegrityError as exc:
        if is_one_purchase_violation(exc):
            raise already_claimed(event_id=tier.event_id, customer_id=customer_id) from exc
        raise
    except ShortOfTickets:
        # Unheld rows that claims in flight have locked come back if those
        # roll back: "busy, retry" rather than a final "sold out".
        if tier_free_tickets(tier_id=tier.id) >= quantity:
            raise Busy("Tickets are being claimed right now; retry shortly.") from None
        _mark_sold_out_if_none_left(tier.event_id)
        raise Gone("Sold out.", code=ErrorCode.SOLD_OUT) from None
    return claim
