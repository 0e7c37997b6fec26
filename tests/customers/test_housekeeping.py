"""Purge of records past their retention, and the beat schedule that runs it."""

from datetime import timedelta

import pytest
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session
from django.utils import timezone

from config.celery import _beat_schedule, app
from customers.housekeeping import records_purge
from customers.models import IdempotencyKey, OneTimeCode
from tests.support.factories import CustomerFactory

pytestmark = pytest.mark.django_db


def code(expires_in: timedelta) -> OneTimeCode:
    return OneTimeCode.objects.create(
        email="a@example.test", code_hash="x", expires_at=timezone.now() + expires_in
    )


def key(name: str, age: timedelta) -> IdempotencyKey:
    row = IdempotencyKey.objects.create(
        customer=CustomerFactory(), scope="claims.create", key=name, request_hash="h"
    )
    IdempotencyKey.objects.filter(pk=row.pk).update(created_at=timezone.now() - age)
    return row


def test_only_records_past_their_retention_go(settings):
    settings.OTP_CODE_RETENTION_HOURS = 24
    settings.IDEMPOTENCY_KEY_RETENTION_HOURS = 24
    old_code, live_code = code(-timedelta(hours=25)), code(timedelta(minutes=5))
    spent_code = code(-timedelta(hours=23))  # dead, but within retention
    old_key, fresh_key = key("old", timedelta(hours=25)), key("fresh", timedelta(hours=1))
    expired = SessionStore()
    expired.set_expiry(-1)
    expired.save()
    live = SessionStore()
    live.save()

    assert records_purge() == {"otp_codes": 1, "idempotency_keys": 1, "sessions": 1}
    assert set(OneTimeCode.objects.values_list("pk", flat=True)) == {live_code.pk, spent_code.pk}
    assert set(IdempotencyKey.objects.values_list("pk", flat=True)) == {fresh_key.pk}
    assert set(Session.objects.values_list("pk", flat=True)) == {live.session_key}
    assert not OneTimeCode.objects.filter(pk=old_code.pk).exists()
    assert not IdempotencyKey.objects.filter(pk=old_key.pk).exists()
    assert records_purge() == {"otp_codes": 0, "idempotency_keys": 0, "sessions": 0}


def test_the_purge_deletes_in_batches(settings, monkeypatch):
    monkeypatch.setattr("customers.housekeeping.BATCH", 2)
    for n in range(5):
        key(f"k{n}", timedelta(days=2))
    assert records_purge()["idempotency_keys"] == 5
    assert not IdempotencyKey.objects.exists()


def test_every_beat_entry_names_a_registered_task():
    app.loader.import_default_modules()
    schedule = _beat_schedule()
    assert "records-purge" in schedule
    for name, entry in schedule.items():
        assert entry["task"] in app.tasks, name
