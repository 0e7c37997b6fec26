"""What a claim accepts as an admission: the admission token names an entry
that is still ADMITTED with its window open, whatever the token's own expiry
says. Refused otherwise (403 admission_expired), with nothing held."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from claims.models import Claim
from claims.services import claim_create
from fairqueue.errors import Forbidden
from inventory.models import Ticket
from queueing import services
from queueing.domain import QueueStatus
from queueing.models import QueueEntry
from queueing.tokens import admission_token_issue
from tests.support.sales import admit, past

pytestmark = pytest.mark.django_db


def claim(tier, customer, token: str) -> Claim:
    return claim_create(
        event_id=tier.event_id,
        customer_id=customer.id,
        admission_token=token,
        tier_id=tier.id,
        quantity=1,
    )


def assert_refused_with_nothing_held(tier, customer, token: str) -> None:
    with pytest.raises(Forbidden) as exc:
        claim(tier, customer, token)
    assert exc.value.code == "admission_expired"
    assert Claim.objects.filter(customer=customer).count() == 0
    assert Ticket.objects.filter(tier=tier, claim__isnull=False).count() == 0


def test_a_token_whose_window_is_over_is_refused(tier):
    customer, entry, _ = admit(tier.event)
    lapsed = datetime.now(UTC) - timedelta(seconds=5)
    QueueEntry.objects.filter(pk=entry.pk).update(admission_expires_at=lapsed)
    old = admission_token_issue(
        event_id=tier.event_id, customer_id=customer.id, queue_entry_id=entry.id, expires_at=lapsed
    )
    assert_refused_with_nothing_held(tier, customer, old)
    assert QueueEntry.objects.get(pk=entry.pk).status == QueueStatus.ADMITTED


def test_a_token_minted_before_its_window_was_given_more_time_still_works(tier):
    """The token's own expiry is when the window was due to end when it was
    minted; the admission clock may have given the window time back since
    (a Redis outage). The entry's window is what counts."""
    customer, entry, _ = admit(tier.event)
    old = admission_token_issue(
        event_id=tier.event_id,
        customer_id=customer.id,
        queue_entry_id=entry.id,
        expires_at=datetime.now(UTC) - timedelta(seconds=5),
    )
    made = claim(tier, customer, old)
    assert (made.status, made.queue_entry_id) == ("CLAIMED", entry.id)
    assert QueueEntry.objects.get(pk=entry.pk).status == QueueStatus.COMPLETED


def test_a_revoked_admission_whose_signature_still_holds_is_refused(tier):
    """The tick EXPIRED the entry (its window lapsed): the token's own expiry
    is still in the future, but it must stop working."""
    customer, entry, token = admit(tier.event)
    QueueEntry.objects.filter(pk=entry.pk).update(admission_expires_at=past())
    assert services.admissions_expire(event_id=tier.event_id) == 1
    assert_refused_with_nothing_held(tier, customer, token)
    assert QueueEntry.objects.get(pk=entry.pk).status == QueueStatus.EXPIRED


def test_the_token_of_an_earlier_admission_of_the_same_customer_is_refused(tier):
    """Admitted, expired, queued again and admitted again: the customer is
    admitted, but the old token names the old (EXPIRED) entry."""
    customer, first_entry, old_token = admit(tier.event)
    QueueEntry.objects.filter(pk=first_entry.pk).update(admission_expires_at=past())
    assert services.admissions_expire(event_id=tier.event_id) == 1
    _, second_entry, new_token = admit(tier.event, customer, window_seconds=120)
    assert second_entry.pk != first_entry.pk

    assert_refused_with_nothing_held(tier, customer, old_token)
    assert claim(tier, customer, new_token).queue_entry_id == second_entry.id


def test_an_admission_already_used_is_refused(tier):
    customer, entry, token = admit(tier.event)
    assert services.queue_entry_complete(entry_id=entry.id) is True
    services.admission_slot_release(event_id=tier.event_id, customer_id=customer.id)
    assert_refused_with_nothing_held(tier, customer, token)
