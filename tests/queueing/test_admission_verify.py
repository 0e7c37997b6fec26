"""The claim step's side of admission: verify, complete, release."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from fairqueue.errors import Forbidden, Unauthenticated
from queueing import services
from queueing.domain import QueueStatus
from queueing.models import QueueEntry
from queueing.store import queue_store
from queueing.tokens import admission_token_issue
from tests.support.factories import CustomerFactory
from tests.support.sales import admit, past

pytestmark = pytest.mark.django_db


def test_verify_accepts_a_live_admission_from_redis_without_reading_postgres(
    event, django_assert_num_queries
):
    customer, entry, token = admit(event)
    with django_assert_num_queries(0):
        verified = services.admission_verify(
            token=token, event_id=event.id, customer_id=customer.id
        )
    assert verified.id == entry.id
    assert verified.status == QueueStatus.ADMITTED
    assert verified.admission_expires_at == entry.admission_expires_at


def test_verify_falls_back_to_postgres_when_redis_was_wiped(event, redis_clean):
    customer, entry, token = admit(event)
    redis_clean.flushdb()
    verified = services.admission_verify(token=token, event_id=event.id, customer_id=customer.id)
    assert verified.pk == entry.pk
    assert verified.status == QueueStatus.ADMITTED


def test_verify_refuses_a_token_of_another_customer_or_event(event):
    customer, _entry, token = admit(event)
    other = CustomerFactory()
    with pytest.raises(Forbidden) as exc:
        services.admission_verify(token=token, event_id=event.id, customer_id=other.id)
    assert exc.value.code == "admission_invalid"
    with pytest.raises(Forbidden) as exc:
        services.admission_verify(token=token, event_id=uuid.uuid4(), customer_id=customer.id)
    assert exc.value.code == "admission_invalid"


def test_verify_refuses_garbage_as_invalid_token(event):
    customer, _, token = admit(event)
    with pytest.raises(Unauthenticated) as exc:
        services.admission_verify(
            token=token[:-3] + "abc", event_id=event.id, customer_id=customer.id
        )
    assert exc.value.code == "invalid_token"
    with pytest.raises(Unauthenticated):
        services.admission_verify(token="not-a-jwt", event_id=event.id, customer_id=customer.id)


def test_verify_refuses_a_token_whose_window_is_over(event):
    customer, entry, _ = admit(event)
    lapsed = datetime.now(UTC) - timedelta(seconds=5)
    QueueEntry.objects.filter(pk=entry.pk).update(admission_expires_at=lapsed)
    old = admission_token_issue(
        event_id=event.id, customer_id=customer.id, queue_entry_id=entry.id, expires_at=lapsed
    )
    with pytest.raises(Forbidden) as exc:
        services.admission_verify(token=old, event_id=event.id, customer_id=customer.id)
    assert exc.value.code == "admission_expired"


def test_a_token_minted_before_its_window_was_given_more_time_still_works(event):
    """The token's own expiry is when the window was due to end when it was
    minted; the admission clock may have given the window time back since
    (a Redis outage). The entry's window is what counts."""
    customer, entry, _ = admit(event)
    old = admission_token_issue(
        event_id=event.id,
        customer_id=customer.id,
        queue_entry_id=entry.id,
        expires_at=datetime.now(UTC) - timedelta(seconds=5),
    )
    verified = services.admission_verify(token=old, event_id=event.id, customer_id=customer.id)
    assert verified.pk == entry.pk


def test_verify_refuses_a_revoked_admission_whose_signature_still_holds(event):
    """The entry was EXPIRED by the tick (window lapsed): the token's own
    expiry is still in the future, but it must stop working."""
    customer, entry, token = admit(event)
    QueueEntry.objects.filter(pk=entry.pk).update(admission_expires_at=past())
    assert services.admissions_expire(event_id=event.id) == 1
    assert QueueEntry.objects.get(pk=entry.pk).status == QueueStatus.EXPIRED
    assert queue_store().admitted_until_ms(event_id=event.id, customer_id=customer.id) is None
    with pytest.raises(Forbidden) as exc:
        services.admission_verify(token=token, event_id=event.id, customer_id=customer.id)
    assert exc.value.code == "admission_expired"


def test_verify_refuses_the_token_of_an_earlier_admission_of_the_same_customer(event):
    """Admitted, expired, queued again and admitted again: the customer is in
    the admitted set, but the old token names the old (EXPIRED) entry."""
    customer, first_entry, old_token = admit(event)
    QueueEntry.objects.filter(pk=first_entry.pk).update(admission_expires_at=past())
    assert services.admissions_expire(event_id=event.id) == 1
    _, second_entry, new_token = admit(event, customer, window_seconds=120)
    assert second_entry.pk != first_entry.pk
    with pytest.raises(Forbidden) as exc:
        services.admission_verify(token=old_token, event_id=event.id, customer_id=customer.id)
    assert exc.value.code == "admission_expired"
    verified = services.admission_verify(
        token=new_token, event_id=event.id, customer_id=customer.id
    )
    assert verified.id == second_entry.id


def test_verify_refuses_a_completed_entry(event, redis_clean):
    customer, entry, token = admit(event)
    assert services.queue_entry_complete(entry_id=entry.id) is True
    services.admission_slot_release(event_id=event.id, customer_id=customer.id)
    with pytest.raises(Forbidden) as exc:
        services.admission_verify(token=token, event_id=event.id, customer_id=customer.id)
    assert exc.value.code == "admission_expired"


def test_complete_moves_admitted_to_completed_once(event):
    _customer, entry, _ = admit(event)
    assert services.queue_entry_complete(entry_id=entry.id) is True
    assert services.queue_entry_complete(entry_id=entry.id) is False
    entry.refresh_from_db()
    assert entry.status == QueueStatus.COMPLETED
    assert entry.finished_at is not None


def test_complete_refuses_a_lapsed_window_and_changes_nothing(event):
    _customer, entry, _ = admit(event)
    QueueEntry.objects.filter(pk=entry.pk).update(admission_expires_at=past())
    assert services.queue_entry_complete(entry_id=entry.id) is False
    entry.refresh_from_db()
    assert entry.status == QueueStatus.ADMITTED
    assert entry.finished_at is None


def test_complete_refuses_a_waiting_entry(event):
    from tests.support.sales import join

    _customer, result = join(event)
    assert services.queue_entry_complete(entry_id=result.queue_entry_id) is False
    assert QueueEntry.objects.get(pk=result.queue_entry_id).status == QueueStatus.WAITING


def test_slot_release_removes_only_that_customer(event):
    first, _, _ = admit(event)
    second, _, _ = admit(event)
    store = queue_store()
    services.admission_slot_release(event_id=event.id, customer_id=first.id)
    assert store.r.zrange(store.admitted_key(event.id), 0, -1) == [str(second.id)]


def test_batch_minted_tokens_are_the_same_jwts_as_single_ones(event):
    """The tick mints its tokens in one batch; they must read exactly like the
    ones the position endpoint re-mints."""
    from queueing.tokens import admission_token_read, admission_tokens_issue

    customer, entry, single = admit(event)
    [batch] = admission_tokens_issue(
        event_id=event.id,
        expires_at=entry.admission_expires_at,
        entries=[(entry.id, customer.id)],
    )
    read = [
        admission_token_read(token=t, event_id=event.id, customer_id=customer.id)
        for t in (single, batch)
    ]
    assert read[0] == read[1]
    assert read[1].queue_entry_id == entry.id
    assert read[1].expires_at == entry.admission_expires_at
    verified = services.admission_verify(token=batch, event_id=event.id, customer_id=customer.id)
    assert verified.id == entry.id
    other = CustomerFactory()
    with pytest.raises(Forbidden):
        admission_token_read(token=batch, event_id=event.id, customer_id=other.id)
