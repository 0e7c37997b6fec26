"""Fixtures of the console tests: organizer users for the admin (helpers:
tests/support/sales.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.support.sales import organizer_login


@pytest.fixture
def org_a():
    return organizer_login(username="alice")


@pytest.fixture
def org_b():
    return organizer_login(username="bob")


@pytest.fixture
def superuser_client():
    user = get_user_model().objects.create_superuser("root", "root@example.test", None)
    client = Client()
    client.force_login(user)
    return client
