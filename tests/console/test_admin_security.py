"""The admin login resists guessing without letting anyone lock its users
out (django-axes: per user and client address, and per client address,
with the proxy count), passwords must pass Django's validators, and every
admin action leaves an audit record."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.test import Client

from events.models import Event
from tests.support.factories import EventFactory, TierFactory, UserFactory
from tests.support.sales import organizer_login

pytestmark = pytest.mark.django_db

LOGIN = "/admin/login/?next=/admin/"
PASSWORD = "correct horse battery staple"


@pytest.fixture(autouse=True)
def fast_hashing(settings):
    """Checking a password costs ~0.3 s with the real hasher; these tests check dozens."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def staff():
    user = UserFactory(username="staffer", is_superuser=True, password=None)
    user.set_password(PASSWORD)
    user.save()
    return user


def login(client: Client, username: str, password: str, **extra: str):
    return client.post(LOGIN, {"username": username, "password": password}, **extra)


def test_wrong_passwords_from_elsewhere_never_lock_the_owner_out(staff, settings):
    """The review's lock-out: an organizer's name and a few wrong passwords
    from a few addresses kept them out of the admin mid-sale."""
    wrong = [
        login(Client(), "staffer", f"guess{i}", REMOTE_ADDR=f"198.51.100.{i}").status_code
        for i in range(3 * settings.AXES_FAILURE_LIMIT)
    ]

    right = login(Client(), "staffer", PASSWORD, REMOTE_ADDR="203.0.113.50")

    assert wrong == [200] * (3 * settings.AXES_FAILURE_LIMIT)  # the form again, each time
    assert right.status_code == 302  # signed in
    assert right["Location"] == "/admin/"


def test_one_address_guessing_one_user_is_slowed_not_locked_for_good(staff, settings):
    """Five wrong passwords from one address for one user: that pair waits
    the cool-off, counted from the fifth failure; guesses while it waits
    are refused without counting or extending it; then it may try again."""
    address = "198.51.100.30"
    wrong = [
        login(Client(), "staffer", f"guess{i}", REMOTE_ADDR=address).status_code
        for i in range(settings.AXES_FAILURE_LIMIT)
    ]
    [attempt] = AccessAttempt.objects.filter(username="staffer")
    locked_at = attempt.attempt_time
    while_locked = [
        login(Client(), "staffer", PASSWORD if i % 2 else "guess", REMOTE_ADDR=address).status_code
        for i in range(10)
    ]
    elsewhere = login(Client(), "staffer", PASSWORD, REMOTE_ADDR="198.51.100.31")
    attempt.refresh_from_db()
    counted = (attempt.failures_since_start, attempt.attempt_time)

    AccessAttempt.objects.update(attempt_time=locked_at - settings.AXES_COOLOFF_TIME)
    after_the_cool_off = login(Client(), "staffer", PASSWORD, REMOTE_ADDR=address)

    assert wrong == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]
    assert while_locked == [429] * 10
    assert counted == (settings.AXES_FAILURE_LIMIT, locked_at)  # not counted, not extended
    assert elsewhere.status_code == 302  # the owner, from their own address
    assert after_the_cool_off.status_code == 302


def test_one_address_is_locked_out_across_usernames(staff, settings):
    """Spraying many usernames from one address: its own limit (wider than
    one user's, for an office behind one address)."""
    limit = settings.ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT
    per_user = settings.AXES_FAILURE_LIMIT - 1  # never one user's limit
    answers = [
        login(Client(), f"nobody{i // per_user}", "guess", REMOTE_ADDR="198.51.100.7").status_code
        for i in range(limit)
    ]

    same_address = login(Client(), "staffer", PASSWORD, REMOTE_ADDR="198.51.100.7")
    other_address = login(Client(), "staffer", PASSWORD, REMOTE_ADDR="198.51.100.8")

    assert limit > settings.AXES_FAILURE_LIMIT
    assert answers == [200] * (limit - 1) + [429]
    assert same_address.status_code == 429
    assert other_address.status_code == 302  # signed in
    assert other_address["Location"] == "/admin/"


def test_behind_a_proxy_the_address_is_the_one_the_proxy_saw(staff, settings):
    settings.NUM_PROXIES = 1
    for i in range(settings.AXES_FAILURE_LIMIT):
        login(
            Client(),
            f"nobody{i}",
            "guess",
            REMOTE_ADDR="10.0.0.2",  # nginx
            HTTP_X_FORWARDED_FOR=f"1.2.3.{i}, 198.51.100.9",  # forged hop, then the real client
        )

    attempts = set(AccessAttempt.objects.values_list("ip_address", flat=True))
    other_client = login(
        Client(), "staffer", PASSWORD, REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.10"
    )

    assert attempts == {"198.51.100.9"}
    assert other_client.status_code == 302  # nginx's own address was not locked


def test_a_success_resets_the_users_failures(staff):
    for _ in range(3):
        login(Client(), "staffer", "guess", REMOTE_ADDR="198.51.100.20")
    assert login(Client(), "staffer", PASSWORD, REMOTE_ADDR="198.51.100.20").status_code == 302
    assert AccessAttempt.objects.filter(username="staffer").count() == 0


@pytest.mark.parametrize("weak", ["admin", "organizer", "12345678901234", "password1234"])
def test_weak_admin_passwords_are_refused(weak):
    with pytest.raises(ValidationError):
        validate_password(weak, user=UserFactory.build(username="organizer"))
    validate_password(PASSWORD, user=UserFactory.build(username="organizer"))


def test_the_admin_refuses_a_weak_password_for_a_new_user():
    root = UserFactory(username="root", is_superuser=True, password=None)
    client = Client()
    client.force_login(root)

    response = client.post(
        "/admin/auth/user/add/",
        {
            "username": "newbie",
            "password1": "admin",
            "password2": "admin",
            "usable_password": "true",
        },
    )

    assert response.status_code == 200  # the form again, with the validators' errors
    assert "This password is too short" in response.content.decode()
    assert not type(root).objects.filter(username="newbie").exists()


def test_every_admin_action_leaves_one_audit_entry_per_object(caplog):
    client, user, organizer = organizer_login(username="alice")
    events = [EventFactory(organizer=organizer, status="ACTIVE") for _ in range(2)]
    for event in events:
        TierFactory(event=event, inventory=1)

    with caplog.at_level("INFO", logger="fairqueue.admin"):
        response = client.post(
            "/admin/events/event/",
            {"action": "pause_events", "_selected_action": [str(e.pk) for e in events]},
        )

    assert response.status_code == 302
    assert set(Event.objects.values_list("status", flat=True)) == {"PAUSED"}
    entries = LogEntry.objects.filter(user=user).order_by("object_id")
    assert [(e.action_flag, e.object_id) for e in entries] == sorted(
        (CHANGE, str(e.pk)) for e in events
    )
    assert {e.change_message for e in entries} == {"Ran action “pause_events”."}
    assert "admin action pause_events by alice on 2 events.Event" in caplog.text


def test_an_action_refused_by_permission_is_not_run_nor_logged():
    client, _user, _organizer = organizer_login(username="bob")
    other = EventFactory(status="ACTIVE")  # another organizer's event

    client.post("/admin/events/event/", {"action": "pause_events", "_selected_action": [other.pk]})

    assert Event.objects.get(pk=other.pk).status == "ACTIVE"
    assert LogEntry.objects.count() == 0
