"""The payment statements' column values: what Django's field preparation
gives, with plain values sent as they are."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from django.db import connection

from payments.domain import EventKind, PaymentStatus
from payments.models import Payment, PaymentEvent
from payments.services.records import db_value

AWARE = datetime(2026, 5, 1, 12, 30, tzinfo=UTC)


def field(model, name):
    return model._meta.get_field(name)


@pytest.mark.parametrize(
    ("model", "name", "value"),
    [
        (Payment, "id", uuid.uuid4()),
        (Payment, "id", str(uuid.uuid4())),  # text for a UUID: converted as ever
        (Payment, "claim", uuid.uuid4()),
        (Payment, "status", PaymentStatus.PENDING),
        (Payment, "reference", "fq-abc"),
        (Payment, "amount", 1_000_000),
        (Payment, "paid_amount", None),
        (Payment, "next_check_at", AWARE),
        (Payment, "blocked_since", None),
        (Payment, "checks", 3),
        (PaymentEvent, "kind", EventKind.STATE_CHANGE),
        (PaymentEvent, "raw_body", ""),
    ],
)
def test_a_value_is_what_the_field_would_send(model, name, value):
    f = field(model, name)
    expected = f.get_db_prep_save(value, connection)
    sent = db_value(f, value)
    assert (type(sent), sent) == (type(expected), expected)


@pytest.mark.parametrize("value", [{"reason": "paid"}, {}, None, "text"])
def test_json_is_prepared_as_json(value):
    f = field(PaymentEvent, "data")
    expected = f.get_db_prep_save(value, connection)
    sent = db_value(f, value)
    assert type(sent) is type(expected)
    assert getattr(sent, "obj", sent) == getattr(expected, "obj", expected)


@pytest.mark.filterwarnings("ignore:DateTimeField")
def test_a_naive_datetime_is_made_aware_as_ever():
    naive = datetime(2026, 5, 1, 12, 30)
    f = field(Payment, "next_check_at")
    assert db_value(f, naive) == f.get_db_prep_save(naive, connection)
    assert db_value(f, naive).tzinfo is not None
