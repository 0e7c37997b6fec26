"""The event's admission settings in the organizer's admin: the time to
choose and admitting ahead of no-shows are shown, explained and saved
through the services."""

import pytest

from events.models import Event
from tests.support.admin import ADD_URL, change_url, event_of, event_post

pytestmark = pytest.mark.django_db


def test_the_event_page_shows_both_times_and_admitting_ahead(org_a):
    client_a, _, organizer_a = org_a
    event = event_of(organizer_a, name="Davido Live")

    page = client_a.get(change_url(event)).content.decode()

    assert "Time to choose (seconds)" in page
    assert 'name="admission_window_seconds" value="120"' in page
    assert "Admit ahead of no-shows" in page
    assert 'name="admit_ahead"' in page
    assert "time to pay" in page  # the fieldset says the two times apart


def test_an_organizer_sets_the_time_to_choose_and_admits_ahead(org_a):
    client_a, _, organizer_a = org_a
    data = event_post(organizer_a, new_tiers=[("Regular", "5000", 5)])
    data.update(admission_window_seconds=90, admit_ahead="on")

    response = client_a.post(ADD_URL, data)

    assert response.status_code == 302
    event = Event.objects.get()
    assert (event.admission_window_seconds, event.admit_ahead) == (90, True)

    data = event_post(organizer_a, event=event, tiers=[(event.tiers.get(), ("Regular", 5000, 5))])
    data.update(admission_window_seconds=90)  # the box left unticked
    assert client_a.post(change_url(event), data).status_code == 302
    event.refresh_from_db()
    assert event.admit_ahead is False
