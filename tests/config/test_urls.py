"""Every endpoint is served by the app that owns what it answers about, and
its path stays what clients call (the paths are a contract: moving the code
never moves them)."""

from __future__ import annotations

import uuid

import pytest
from django.urls import resolve, reverse

EVENT, TIER = uuid.uuid4(), uuid.uuid4()

# path, URL name, the module of the view that answers it
OWNERS = [
    ("/api/v1/events/", "event-list", "events.views"),
    (f"/api/v1/events/{EVENT}/", "event-detail", "events.views"),
    (f"/api/v1/events/{EVENT}/tiers/{TIER}/seats/", "tier-seat-map", "events.views"),
    (f"/api/v1/events/{EVENT}/me/", "me-event", "storefront.views"),
    (f"/api/v1/events/{EVENT}/claims/", "event-claim-create", "claims.views"),
    ("/healthz", "healthz", "console.health"),
    ("/readyz", "readyz", "console.health"),
    ("/metrics", "metrics", "console.metrics"),
]


@pytest.mark.parametrize(("path", "name", "module"), OWNERS)
def test_each_path_is_served_by_the_app_that_owns_it(path, name, module):
    match = resolve(path)
    view = getattr(match.func, "view_class", match.func)

    assert view.__module__ == module
    assert match.url_name == name
    assert reverse(name, kwargs=match.kwargs) == path
