"""Sales set up for tests: events on sale, the waiting line, admitted
customers made directly (Postgres row ADMITTED, signed admission token, Redis
admitted set, as the admission tick leaves them), claims and held tickets."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.test import Client
from django.utils import timezone

from claims.models import Claim
from claims.services import claim_create
from customers.models import Customer
from events.management.commands.bootstrap_demo import ensure_organizer_group
from events.models import Event, Organizer, TicketTier
from events.services import tier_create
from inventory.models import Ticket
from inventory.services import inventory_sync_event
from inventory.store import inventory_store
from ledger.domain import charge_moves
from ledger.models import AccountEntry
from payments.models import Payment
from queueing import services
from queueing.domain import QueueStatus
from queueing.models import QueueEntry
from queueing.selectors import admission_window_open
from queueing.store import queue_store
from queueing.tokens import admission_token_issue, admission_token_read
from tests.support.factories import (
    CustomerFactory,
    EventFactory,
    OrganizerFactory,
    TierFactory,
    UserFactory,
)


@dataclass(frozen=True)
class Admitted:
    customer: Customer
    entry: QueueEntry
    token: str


def admit_directly(
    event: Event, customers: Iterable[Customer], *, window_seconds: int = 300
) -> list[Admitted]:
    """Entries ADMITTED in Postgres, tokens minted, members of the Redis
    admitted set with the admission expiry (ms) as score."""
    expires_at = timezone.now() + timedelta(seconds=window_seconds)
    customers = list(customers)
    entries = QueueEntry.objects.bulk_create(
        [
            QueueEntry(
                event=event,
                customer=customer,
                status=QueueStatus.ADMITTED,
                score=n,
                admitted_at=timezone.now(),
                admission_expires_at=expires_at,
            )
            for n, customer in enumerate(customers)
        ]
    )
    store = queue_store()
    expires_ms = int(expires_at.timestamp() * 1000)
    store.add_many(
        key=store.admitted_key(event.id), members=[(str(c.id), expires_ms) for c in customers]
    )
    return [
        Admitted(
            customer=customer,
            entry=entry,
            token=admission_token_issue(
                event_id=event.id,
                customer_id=customer.id,
                queue_entry_id=entry.id,
                expires_at=expires_at,
            ),
        )
        for customer, entry in zip(customers, entries, strict=True)
    ]


def make_customers(n: int) -> list[Customer]:
    tag = uuid.uuid4().hex[:8]
    return Customer.objects.bulk_create(
        [Customer(email=f"buyer{i}-{tag}@example.test") for i in range(n)]
    )


def on_sale(*, tickets: int = 10, price: int = 500_000, **event_fields: Any) -> TicketTier:
    """An ACTIVE event with one tier, its Redis counter synced as
    event_activate leaves it."""
    event = EventFactory(**event_fields)
    tier = TierFactory(event=event, inventory=tickets, price=price)
    inventory_sync_event(event_id=event.id)
    return tier


def on_sale_reserved(
    *, rows: int = 3, seats_per_row: int = 10, price: int = 500_000, **event_fields: Any
) -> TicketTier:
    """An ACTIVE event with one reserved tier of ``rows`` x ``seats_per_row``
    seats (A-1 ...), its Redis counter synced."""
    event = EventFactory(**event_fields)
    tier = tier_create(
        event=event, name="Stalls", price=price, inventory=0, seat_grid=(rows, seats_per_row)
    )
    inventory_sync_event(event_id=event.id)
    return tier


def claim_seats(tier: TicketTier, admitted: Admitted, seats: list[str]) -> Claim:
    return claim_create(
        event_id=tier.event_id,
        customer_id=admitted.customer.id,
        admission_token=admitted.token,
        tier_id=tier.id,
        seats=seats,
    )


def claim_one(tier: TicketTier, admitted: Admitted) -> Claim:
    """One ticket of ``tier`` for an admitted customer, through the service."""
    return claim_create(
        event_id=tier.event_id,
        customer_id=admitted.customer.id,
        admission_token=admitted.token,
        tier_id=tier.id,
        quantity=1,
    )


def counter(tier: TicketTier) -> int | None:
    return inventory_store().available(event_id=tier.event_id, tier_ids=[tier.id])[str(tier.id)]


def in_flight(tier: TicketTier) -> list[str]:
    return inventory_store().inflight(event_id=tier.event_id, tier_id=tier.id)


def claims_for(tier, n: int) -> list[Claim]:
    return [
        claim_create(
            event_id=tier.event_id,
            customer_id=a.customer.id,
            admission_token=a.token,
            tier_id=tier.id,
            quantity=1,
        )
        for a in admit_directly(tier.event, make_customers(n))
    ]


def expire(*claims: Claim) -> None:
    Claim.objects.filter(pk__in=[c.pk for c in claims]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )


def pay(claim: Claim, status: str = "PENDING") -> Payment:
    """A live payment for the claim, as payment_open leaves it."""
    Claim.objects.filter(pk=claim.pk).update(payment_in_flight=True)
    return Payment.objects.create(
        claim=claim,
        customer_id=claim.customer_id,
        reference=f"fq_{uuid.uuid4().hex}",
        email="buyer@example.test",
        amount=claim.amount,
        currency=claim.currency,
        status=status,
        next_check_at=timezone.now() + timedelta(minutes=5),
    )


def status_of(claim: Claim) -> str:
    return Claim.objects.get(pk=claim.pk).status


# --- the waiting line ------------------------------------------------------------


def make_event(*, tickets: int = 10, **fields):
    event = EventFactory(**fields)
    TierFactory(event=event, inventory=tickets)
    return event


def join(event, customer=None) -> tuple:
    customer = customer or CustomerFactory()
    result = services.queue_join(event_id=event.id, customer_id=customer.id)
    return customer, result


def admit(event, customer=None, *, window_seconds: int | None = None) -> tuple:
    """Join and run a tick so that this customer is admitted (the only one
    waiting). Returns (customer, entry, admission token)."""
    if window_seconds is not None:
        type(event).objects.filter(pk=event.pk).update(admission_window_seconds=window_seconds)
    customer, _ = join(event, customer)
    report = services.admission_tick_event(event_id=event.id)
    assert report.admitted >= 1, report
    entry = QueueEntry.objects.get(event=event, customer=customer, status="ADMITTED")
    position = services.queue_position(event_id=event.id, customer_id=customer.id)
    return customer, entry, position.admission_token


def admission_usable(event, customer, token: str) -> QueueEntry:
    """What a claim accepts as an admission: the token is this customer's for
    this event, and the entry it names is ADMITTED with its window open (the
    claim statement's own check). Returns that entry."""
    admission = admission_token_read(token=token, event_id=event.id, customer_id=customer.id)
    entry = QueueEntry.objects.get(
        pk=admission.queue_entry_id, event_id=event.id, customer_id=customer.id
    )
    assert entry.status == QueueStatus.ADMITTED
    assert admission_window_open(entry=entry, now=timezone.now())
    return entry


def past(seconds: int = 1) -> datetime:
    return timezone.now() - timedelta(seconds=seconds)


# --- tickets held and organizers (admin tests) ---------------------------------


def hold_tickets(tier: TicketTier, quantity: int, *, status: str = "CLAIMED") -> Claim:
    """A claim of ``status`` holding ``quantity`` free tickets of ``tier``."""
    claim = Claim.objects.create(
        event=tier.event,
        tier=tier,
        customer=CustomerFactory(),
        quantity=quantity,
        amount=tier.price * quantity,
        currency=tier.event.currency,
        status=status,
        expires_at=timezone.now() + timedelta(minutes=10),
    )
    # Free rows never sold (a row on resale is its first buyer's until resold).
    free = Ticket.objects.filter(tier=tier, claim__isnull=True, resale_from__isnull=True)
    ids = list(free.values_list("id", flat=True)[:quantity])
    assert len(ids) == quantity
    Ticket.objects.filter(id__in=ids).update(claim=claim)
    return claim


def sell(tier: TicketTier, quantity: int, *, at: datetime | None = None) -> Claim:
    """A paid purchase as confirming its payment leaves it: the claim
    CONFIRMED (``at``, now by default) with its ticket rows, its payment
    CONFIRMED, and the charge in the purchase's account (what the
    dashboard's revenue and sales line read)."""
    at = at or timezone.now()
    claim = hold_tickets(tier, quantity, status="CONFIRMED")
    Claim.objects.filter(pk=claim.pk).update(confirmed_at=at)
    payment = pay(claim, status="CONFIRMED")
    Claim.objects.filter(pk=claim.pk).update(payment_in_flight=False)
    Payment.objects.filter(pk=payment.pk).update(
        paid_amount=claim.amount, paid_currency=claim.currency, confirmed_at=at
    )
    # The account is append-only (no UPDATE): written as of ``at``.
    (charge,) = charge_moves(amount=claim.amount, tickets=quantity)
    AccountEntry.objects.create(
        claim_id=claim.pk, kind=charge.kind.value, amount=charge.amount, currency=claim.currency,
        debit=charge.debit, credit=str(charge.credit), tickets=charge.tickets,
        payment_id=payment.pk, actor="test", created_at=at,
    )  # fmt: skip
    return claim


def organizer_login(organizer: Organizer | None = None, **user_fields) -> tuple:
    """A staff user in the Organizers group, member of ``organizer`` (a new one
    by default). Returns (logged-in client, user, organizer)."""
    organizer = organizer or OrganizerFactory()
    # No password: force_login needs none, and hashing one costs ~0.5 s per user.
    user = UserFactory(password=None, **user_fields)
    user.groups.add(ensure_organizer_group())
    organizer.members.add(user)
    client = Client()
    client.force_login(user)
    return client, user, organizer
