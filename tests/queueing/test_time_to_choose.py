"""The time to choose: an admission that has not become a claim lapses after
the event's time to choose (its slot to the next in line at that tick),
while a claim made in time keeps its own time to pay; one extension on
request, a second is 409."""

from __future__ import annotations

import time
from datetime import timedelta

import jwt
import pytest
from django.conf import settings
from django.utils import timezone

from claims.services import claim_create
from events.domain import CHOOSE_SECONDS_DEFAULT
from events.services import TierSpec, event_activate, event_create
from queueing import services
from queueing.models import QueueEntry
from queueing.store import queue_store
from tests.support.factories import CustomerFactory, OrganizerFactory, bearer
from tests.support.sales import admit, join, make_event, past

pytestmark = pytest.mark.django_db


def extend_url(event) -> str:
    return f"/api/v1/events/{event.id}/queue/extend/"


def admitted_score_ms(event, customer) -> float | None:
    store = queue_store()
    return store.r.zscore(store.admitted_key(event.id), str(customer.id))


def test_an_event_gives_two_minutes_to_choose_by_default():
    now = timezone.now()
    event = event_create(
        organizer=OrganizerFactory(),
        name="Burna Boy Live",
        sale_start=now - timedelta(minutes=1),
        sale_end=now + timedelta(hours=1),
        tiers=[TierSpec("Regular", 500_000, 5)],
    )
    event_activate(event_id=event.id)
    event.refresh_from_db()
    assert (event.admission_window_seconds, CHOOSE_SECONDS_DEFAULT) == (120, 120)
    assert event.admit_ahead is False
    _, entry, _ = admit(event)
    chosen_by = entry.admission_expires_at - entry.admitted_at
    assert timedelta(seconds=119) < chosen_by <= timedelta(seconds=120)


def test_an_admission_lapses_after_its_time_to_choose_while_a_claim_made_in_time_keeps_its_hold():
    event = make_event(tickets=5, admission_window_seconds=1)
    tier = event.tiers.get()
    buyer, _, token = admit(event)
    claim = claim_create(
        event_id=event.id, customer_id=buyer.id, admission_token=token, tier_id=tier.id, quantity=1
    )
    idler, idle_entry, _ = admit(event)
    time.sleep(1.1)  # the time to choose (1 s) is over for both admissions

    report = services.admission_tick_event(event_id=event.id)

    assert report.expired == 1
    idle_entry.refresh_from_db()
    assert (idle_entry.status, idle_entry.end_reason) == ("EXPIRED", "admission_window")
    assert admitted_score_ms(event, idler) is None
    # The claim made in time has its own time to pay, untouched by the lapse.
    claim.refresh_from_db()
    assert claim.status == "CLAIMED"
    assert claim.expires_at - claim.created_at == timedelta(seconds=settings.CLAIM_TTL_SECONDS)
    assert claim.expires_at > timezone.now() + timedelta(seconds=settings.CLAIM_TTL_SECONDS - 10)
    assert QueueEntry.objects.get(event=event, customer=buyer).status == "COMPLETED"


def test_the_lapse_frees_the_slot_for_the_next_in_line_within_one_tick():
    event = make_event(tickets=1, admission_window_seconds=1)
    first, _ = join(event)
    second, _ = join(event)
    assert services.admission_tick_event(event_id=event.id).admitted == 1
    # The one ticket is spoken for: nobody more while the first chooses.
    assert services.admission_tick_event(event_id=event.id).admitted == 0
    time.sleep(1.1)

    report = services.admission_tick_event(event_id=event.id)

    assert (report.expired, report.admitted) == (1, 1)
    assert QueueEntry.objects.get(event=event, customer=first).status == "EXPIRED"
    assert QueueEntry.objects.get(event=event, customer=second).status == "ADMITTED"
    assert admitted_score_ms(event, second) is not None


def test_the_time_to_choose_is_extended_once_and_a_second_ask_is_409(api):
    event = make_event(tickets=5)
    customer, entry, _ = admit(event)
    before = entry.admission_expires_at

    response = api.post(extend_url(event), **bearer(customer))

    assert response.status_code == 200, response.content
    body = response.json()
    entry.refresh_from_db()
    window = timedelta(seconds=event.admission_window_seconds)
    assert entry.admission_expires_at == before + window
    assert entry.extended_at is not None
    assert body["status"] == "ADMITTED"
    assert body["admission_expires_at"] == entry.admission_expires_at.isoformat()
    assert body["admission_extendable"] is False
    # The token carries the new end; Redis' admitted set has it too.
    claims = jwt.decode(body["admission_token"], options={"verify_signature": False})
    assert claims["exp"] == int(entry.admission_expires_at.timestamp())
    assert claims["qe"] == str(entry.id)
    assert admitted_score_ms(event, customer) == entry.admission_expires_at.timestamp() * 1000
    position = services.queue_position(event_id=event.id, customer_id=customer.id)
    assert position.admission_expires_at == entry.admission_expires_at
    assert position.admission_extendable is False

    again = api.post(extend_url(event), **bearer(customer))

    assert again.status_code == 409
    assert again.json()["error"]["code"] == "already_extended"
    assert again.json()["error"]["details"] == {
        "admission_expires_at": entry.admission_expires_at.isoformat()
    }
    entry.refresh_from_db()
    assert entry.admission_expires_at == before + window  # not extended twice


def test_a_fresh_admission_says_its_extension_is_there(api):
    event = make_event(tickets=5)
    customer, _, _ = admit(event)
    body = api.get(f"/api/v1/events/{event.id}/queue/position/", **bearer(customer)).json()
    assert body["status"] == "ADMITTED"
    assert body["admission_extendable"] is True


def test_only_an_open_admission_is_extended(api):
    event = make_event(tickets=5, admission_batch_size=1)
    admitted, entry, _ = admit(event)
    waiting, _ = join(event)
    stranger = CustomerFactory()

    still_waiting = api.post(extend_url(event), **bearer(waiting))
    assert still_waiting.status_code == 409
    assert still_waiting.json()["error"]["code"] == "invalid_transition"
    assert api.post(extend_url(event), **bearer(stranger)).status_code == 404

    QueueEntry.objects.filter(pk=entry.pk).update(admission_expires_at=past())
    lapsed = api.post(extend_url(event), **bearer(admitted))
    assert lapsed.status_code == 403
    assert lapsed.json()["error"]["code"] == "admission_expired"
    entry.refresh_from_db()
    assert entry.extended_at is None
    assert entry.admission_expires_at < timezone.now()
    assert QueueEntry.objects.get(event=event, customer=waiting).extended_at is None
