"""Who sees which queue entries, claims and payments in the admin: organizer
members their own events' rows, platform staff (in no organizer) all."""

import uuid

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from payments.models import Payment
from queueing.models import QueueEntry
from tests.support.factories import CustomerFactory, OrganizerFactory, TierFactory, UserFactory
from tests.support.payments import make_claim

pytestmark = pytest.mark.django_db

CHANGELISTS = {
    "queue entries": "/admin/queueing/queueentry/",
    "claims": "/admin/claims/claim/",
    "payments": "/admin/payments/payment/",
}
VIEW_PERMISSIONS = ("view_queueentry", "view_claim", "view_payment")


def rows_of_one_event(organizer) -> set[str]:
    """A queue entry, a claim and a payment of a new event of ``organizer``;
    returns their primary keys."""
    tier = TierFactory(event__organizer=organizer, inventory=2)
    customer = CustomerFactory()
    entry = QueueEntry.objects.create(
        event=tier.event, customer=customer, status="COMPLETED", score=1, joined_at=timezone.now()
    )
    claim = make_claim(tier=tier, customer=customer)
    payment = Payment.objects.create(
        claim=claim,
        customer=customer,
        reference=f"ref-{uuid.uuid4().hex}",
        amount=claim.amount,
        currency=claim.currency,
        next_check_at=timezone.now(),
    )
    return {str(entry.pk), str(claim.pk), str(payment.pk)}


def admin_client(*, organizer=None) -> Client:
    user = UserFactory(password=None)
    user.user_permissions.add(*Permission.objects.filter(codename__in=VIEW_PERMISSIONS))
    if organizer is not None:
        organizer.members.add(user)
    client = Client()
    client.force_login(user)
    return client


def seen(client: Client) -> set[str]:
    keys = set()
    for name, url in CHANGELISTS.items():
        response = client.get(url)
        assert response.status_code == 200, name
        keys |= {str(row.pk) for row in response.context["cl"].result_list}
    return keys


def test_an_organizer_member_sees_only_its_own_events_rows():
    mine, theirs = OrganizerFactory(), OrganizerFactory()
    own, other = rows_of_one_event(mine), rows_of_one_event(theirs)
    assert seen(admin_client(organizer=mine)) == own
    assert seen(admin_client(organizer=theirs)) == other


def test_platform_staff_in_no_organizer_see_every_events_rows():
    rows = rows_of_one_event(OrganizerFactory()) | rows_of_one_event(OrganizerFactory())
    assert seen(admin_client()) == rows
