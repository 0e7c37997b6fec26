"""The claim body's quick parse (claims/serializers.py) accepts only what the
serializer accepts, gives the same data, and leaves every refusal to it."""

import contextlib
import uuid

import pytest
from rest_framework import serializers

from claims.serializers import ClaimCreateSerializer
from fairqueue.api import parse
from fairqueue.errors import InvalidInput

TIER = str(uuid.uuid4())
TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"


def serializer_says(body: object) -> dict | None:
    serializer = ClaimCreateSerializer(data=body)
    try:
        serializer.is_valid(raise_exception=True)
    except (serializers.ValidationError, InvalidInput):
        return None
    return dict(serializer.validated_data)


BODIES = [
    {"admission_token": TOKEN, "tier_id": TIER, "quantity": 2},
    {"admission_token": TOKEN, "tier_id": TIER.upper(), "quantity": 1},
    {"admission_token": TOKEN, "tier_id": TIER.replace("-", ""), "quantity": 1},
    {"admission_token": TOKEN, "tier_id": "{" + TIER + "}", "quantity": 1},
    {"admission_token": TOKEN, "tier_id": f"urn:uuid:{TIER}", "quantity": 1},
    {"admission_token": TOKEN, "tier_id": TIER, "quantity": 0},
    {"admission_token": TOKEN, "tier_id": TIER, "quantity": -3},
    {"admission_token": TOKEN, "tier_id": TIER, "quantity": 10**30},
    {"admission_token": "a b", "tier_id": TIER, "quantity": 1},
    # Refused or reshaped by the serializer: the quick parse must step aside.
    {"admission_token": f" {TOKEN} ", "tier_id": TIER, "quantity": 1},
    {"admission_token": f"{TOKEN}\n", "tier_id": TIER, "quantity": 1},
    {"admission_token": "", "tier_id": TIER, "quantity": 1},
    {"admission_token": "   ", "tier_id": TIER, "quantity": 1},
    {"admission_token": "x" * 4097, "tier_id": TIER, "quantity": 1},
    {"admission_token": "x" * 4096, "tier_id": TIER, "quantity": 1},
    {"admission_token": "to\x00ken", "tier_id": TIER, "quantity": 1},
    {"admission_token": "to\ud800ken", "tier_id": TIER, "quantity": 1},
    {"admission_token": "tökén", "tier_id": TIER, "quantity": 1},
    {"admission_token": "tab\there", "tier_id": TIER, "quantity": 1},
    {"admission_token": 123, "tier_id": TIER, "quantity": 1},
    {"admission_token": None, "tier_id": TIER, "quantity": 1},
    {"admission_token": TOKEN, "tier_id": "not-a-uuid", "quantity": 1},
    {"admission_token": TOKEN, "tier_id": TIER[:-1], "quantity": 1},
    {"admission_token": TOKEN, "tier_id": 5, "quantity": 1},
    {"admission_token": TOKEN, "tier_id": TIER, "quantity": True},
    {"admission_token": TOKEN, "tier_id": TIER, "quantity": 1.0},
    {"admission_token": TOKEN, "tier_id": TIER, "quantity": 1.5},
    {"admission_token": TOKEN, "tier_id": TIER, "quantity": "2"},
    {"admission_token": TOKEN, "tier_id": TIER, "quantity": None},
    {"admission_token": TOKEN, "tier_id": TIER},
    {"admission_token": TOKEN, "quantity": 1},
    {"tier_id": TIER, "quantity": 1},
    {"admission_token": TOKEN, "tier_id": TIER, "quantity": 1, "seats": ["A-1"]},
    {"admission_token": TOKEN, "tier_id": TIER, "seats": ["A-1", "A-2"]},
    {"admission_token": TOKEN, "tier_id": TIER, "quantity": 1, "extra": 1},
]


@pytest.mark.parametrize("body", BODIES)
def test_quick_parse_agrees_with_the_serializer(body):
    quick = ClaimCreateSerializer.quick(body)
    expected = serializer_says(body)
    if quick is not None:
        assert quick == expected
    if expected is None:
        assert quick is None
    with_parse = None
    with contextlib.suppress(serializers.ValidationError, InvalidInput):
        with_parse = parse(ClaimCreateSerializer, body)
    assert (dict(with_parse) if with_parse is not None else None) == expected


def test_the_common_body_takes_the_quick_path():
    body = {"admission_token": TOKEN, "tier_id": TIER, "quantity": 2}
    assert ClaimCreateSerializer.quick(body) == {
        "admission_token": TOKEN,
        "tier_id": uuid.UUID(TIER),
        "quantity": 2,
    }
