"""Fixtures of the claims tests (helpers: tests/support/sales.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import events.selectors
from events.models import TicketTier
from events.selectors import tier_snapshot_forget
from fairqueue.redis import get_redis
from tests.claims.resale_support import buy
from tests.support.factories import CustomerFactory
from tests.support.redis_proxy import RedisProxy
from tests.support.redis_server import app_redis
from tests.support.sales import Admitted, admit_directly, on_sale


@pytest.fixture(autouse=True)
def _fresh_tier_cache(monkeypatch):
    """Tests change events between claims and must see it at once."""
    monkeypatch.setattr(events.selectors, "TIER_CACHE_SECONDS", 0)
    tier_snapshot_forget()
    yield
    tier_snapshot_forget()


@pytest.fixture
def tier() -> TicketTier:
    return on_sale(tickets=10)


@pytest.fixture
def buyer(tier: TicketTier) -> Admitted:
    return admit_directly(tier.event, [CustomerFactory()])[0]


@pytest.fixture
def gateway(sandbox):
    """The sandbox gateway for the resale tests: webhooks sent by the test,
    refunds answered by hand."""
    sandbox.config(send_webhooks=False, refund_outcome="manual")
    return sandbox


@pytest.fixture
def shop(api, client, gateway, django_capture_on_commit_callbacks, eager_tasks):
    """``shop(tier, customer, quantity=1)``: a paid purchase, through the API."""

    def purchase(tier, who, quantity=1):
        return buy(
            api, client, gateway, django_capture_on_commit_callbacks, tier, who, quantity=quantity
        )

    return purchase


@pytest.fixture
def lossy(monkeypatch, settings) -> Iterator[RedisProxy]:
    """The app's Redis seen through a proxy that can lose a reply, with a
    short socket timeout (the retry comes quickly)."""
    proxy = RedisProxy(settings.REDIS_URL)
    settings.REDIS_SOCKET_TIMEOUT = 0.3
    try:
        with app_redis(proxy, monkeypatch, settings):
            yield proxy
    finally:
        proxy.close()


def lose_script_reply(proxy: RedisProxy, script: Any) -> None:
    """The next run of ``script`` (a registered script) happens in Redis and
    its reply is lost. Loaded first: otherwise the reply lost is NOSCRIPT and
    the script runs once, on redis-py's reload, whatever it does on a retry."""
    get_redis().script_load(script.script)
    proxy.lose_reply_to(script.sha.encode())
