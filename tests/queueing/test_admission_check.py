"""The claim step's side of admission: the token read, the entry completed,
the admitted slot released."""

from __future__ import annotations

import uuid

import pytest

from fairqueue.errors import Forbidden, Unauthenticated
from queueing import services
from queueing.domain import QueueStatus
from queueing.models import QueueEntry
from queueing.store import queue_store
from queueing.tokens import admission_token_read
from tests.support.factories import CustomerFactory
from tests.support.sales import admission_usable, admit, past

pytestmark = pytest.mark.django_db


def test_a_token_of_another_customer_or_event_is_refused(event):
    customer, _entry, token = admit(event)
    other = CustomerFactory()
    with pytest.raises(Forbidden) as exc:
        admission_token_read(token=token, event_id=event.id, customer_id=other.id)
    assert exc.value.code == "admission_invalid"
    with pytest.raises(Forbidden) as exc:
        admission_token_read(token=token, event_id=uuid.uuid4(), customer_id=customer.id)
    assert exc.value.code == "admission_invalid"


def test_garbage_is_an_invalid_token(event):
    customer, _, token = admit(event)
    with pytest.raises(Unauthenticated) as exc:
        admission_token_read(token=token[:-3] + "abc", event_id=event.id, customer_id=customer.id)
    assert exc.value.code == "invalid_token"
    with pytest.raises(Unauthenticated):
        admission_token_read(token="not-a-jwt", event_id=event.id, customer_id=customer.id)


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
    from queueing.tokens import admission_tokens_issue

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
    assert admission_usable(event, customer, batch).id == entry.id
    other = CustomerFactory()
    with pytest.raises(Forbidden):
        admission_token_read(token=batch, event_id=event.id, customer_id=other.id)
