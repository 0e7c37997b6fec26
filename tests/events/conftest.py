"""Fixtures of the events tests: organizer users for the admin, and tickets
held by claims (set up directly: the claim flow itself is tested elsewhere)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from claims.models import Claim
from events.management.commands.bootstrap_demo import ensure_organizer_group
from events.models import Organizer, TicketTier
from inventory.models import Ticket
from tests.factories import CustomerFactory, OrganizerFactory, UserFactory


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
    ids = list(
        Ticket.objects.filter(tier=tier, claim__isnull=True).values_list("id", flat=True)[:quantity]
    )
    assert len(ids) == quantity
    Ticket.objects.filter(id__in=ids).update(claim=claim)
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


@pytest.fixture
def org_a():
    return organizer_login(username="alice")


@pytest.fixture
def org_b():
    return organizer_login(username="bob")


@pytest.fixture
def superuser_client():
    user = get_user_model().objects.create_superuser("root", "root@example.test", None)
    client = Client()
    client.force_login(user)
    return client
