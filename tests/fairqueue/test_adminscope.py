"""Who sees which queue entries, claims, payments and webhook receipts in
the admin: organizer members their own events' rows, platform staff (the
"Platform staff" group, or superusers) all, anyone else nothing."""

import uuid

import pytest
from django.contrib.auth.models import Group, Permission
from django.test import Client
from django.utils import timezone

from fairqueue.adminscope import PLATFORM_STAFF_GROUP
from payments.models import Payment, WebhookReceipt
from queueing.models import QueueEntry
from tests.support.factories import CustomerFactory, OrganizerFactory, TierFactory, UserFactory
from tests.support.payments import make_claim

pytestmark = pytest.mark.django_db

CHANGELISTS = {
    "queue entries": "/admin/queueing/queueentry/",
    "claims": "/admin/claims/claim/",
    "payments": "/admin/payments/payment/",
    "webhook receipts": "/admin/payments/webhookreceipt/",
}
VIEW_PERMISSIONS = ("view_queueentry", "view_claim", "view_payment", "view_webhookreceipt")


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
    receipt = WebhookReceipt.objects.create(
        event_type="charge.success",
        reference=payment.reference,
        key=payment.reference,
        payment=payment,
    )
    return {str(entry.pk), str(claim.pk), str(payment.pk), str(receipt.pk)}


def admin_client(*, organizer=None, platform_staff: bool = False) -> Client:
    user = UserFactory(password=None)
    user.user_permissions.add(*Permission.objects.filter(codename__in=VIEW_PERMISSIONS))
    if organizer is not None:
        organizer.members.add(user)
    if platform_staff:
        user.groups.add(Group.objects.get_or_create(name=PLATFORM_STAFF_GROUP)[0])
    client = Client()
    client.force_login(user)
    return client


def seen(client: Client) -> set[str]:
    keys = set()
    for name, url in CHANGELISTS.items():
        response = client.get(url)
        if response.status_code == 403:  # no row of theirs: not the page either
            continue
        assert response.status_code == 200, name
        keys |= {str(row.pk) for row in response.context["cl"].result_list}
    return keys


def test_an_organizer_member_sees_only_its_own_events_rows():
    mine, theirs = OrganizerFactory(), OrganizerFactory()
    own, other = rows_of_one_event(mine), rows_of_one_event(theirs)
    assert seen(admin_client(organizer=mine)) == own
    assert seen(admin_client(organizer=theirs)) == other


def test_platform_staff_see_every_events_rows_and_receipts_without_a_payment():
    rows = rows_of_one_event(OrganizerFactory()) | rows_of_one_event(OrganizerFactory())
    orphan = WebhookReceipt.objects.create(
        event_type="charge.success", reference="unknown-ref", key="unknown-ref"
    )
    assert seen(admin_client(platform_staff=True)) == rows | {str(orphan.pk)}


def test_a_receipt_for_an_unknown_reference_is_not_an_organizers_business():
    mine = OrganizerFactory()
    own = rows_of_one_event(mine)
    WebhookReceipt.objects.create(
        event_type="charge.success", reference="unknown-ref", key="unknown-ref"
    )
    assert seen(admin_client(organizer=mine)) == own


def test_staff_in_no_organizer_and_not_platform_staff_see_nothing():
    """Fails closed: a user removed from their organizer (or never put in
    one) is not promoted to seeing every organizer's rows."""
    mine = OrganizerFactory()
    rows_of_one_event(mine)
    client = admin_client(organizer=mine)
    mine.members.clear()  # removed from the organizer

    assert seen(client) == set()
    assert seen(admin_client()) == set()
    assert [client.get(url).status_code for url in CHANGELISTS.values()] == [403] * 4


def test_superusers_are_platform_staff():
    rows = rows_of_one_event(OrganizerFactory())
    user = UserFactory(password=None, is_superuser=True)
    client = Client()
    client.force_login(user)
    assert seen(client) == rows
