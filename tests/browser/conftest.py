"""The real stack for the browser tests, in this process and beside it: the
live server (pages + API, a thread), a daphne for the queue WebSocket (a
process on the test database), the sandbox gateway (a thread, its webhooks
to the live server), and Celery tasks run where they are enqueued. The
admission tick runs in the test, as the beat's worker would."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.utils import timezone
from selenium import webdriver
from selenium.webdriver.common.by import By

from customers.tokens import customer_token_issue
from devtools.sandbox import SandboxServer
from events.services import TierSpec, event_activate, event_create
from queueing.services import admission_tick_event
from tests.support.browser import Daphne, chromium, csp_violations, wait_panel
from tests.support.factories import CustomerFactory, OrganizerFactory
from tests.support.payments import CONTROL_TOKEN, WEBHOOK_PATH, Sandbox


@dataclass
class Stack:
    url: str
    daphne: Daphne
    sandbox: Sandbox


@pytest.fixture
def stack(live_server, settings, tmp_path, eager_tasks) -> Iterator[Stack]:
    daphne = Daphne(tmp_path / "daphne.log", pages_port=urlsplit(live_server.url).port).start()
    sandbox = SandboxServer(
        port=0,
        secret_key=settings.PAYSTACK_SECRET_KEY,
        webhook_url=live_server.url + WEBHOOK_PATH,
        control_token=CONTROL_TOKEN,
    ).start()
    settings.WEBSOCKET_PUBLIC_URL = daphne.url
    settings.PAYSTACK_BASE_URL = sandbox.url
    settings.PUBLIC_BASE_URL = ""  # links follow the host the browser used
    settings.ADMISSION_INTERVAL_SECONDS = 5.0
    try:
        yield Stack(url=live_server.url, daphne=daphne, sandbox=Sandbox(sandbox))
    finally:
        daphne.stop()
        sandbox.stop()


@pytest.fixture
def desktop() -> Iterator[webdriver.Chrome]:
    """Every page a test opened worked under the Content-Security-Policy:
    the console holds no refusal of it."""
    with chromium(1280, 900) as driver:
        yield driver
        assert csp_violations(driver) == []


@pytest.fixture
def phone() -> Iterator[webdriver.Chrome]:
    with chromium(390, 844) as driver:
        yield driver
        assert csp_violations(driver) == []


def sale(*, tickets: int = 100, batch: int = 10, starts_in: float = -60, **fields):
    """An ACTIVE event with two tiers, through the services (ticket rows, counters)."""
    now = timezone.now()
    event = event_create(
        organizer=fields.pop("organizer", None) or OrganizerFactory(),
        name=fields.pop("name", "Detty December Live"),
        sale_start=now + timedelta(seconds=starts_in),
        sale_end=now + timedelta(hours=2),
        tiers=[TierSpec("Regular", 500_000, tickets), TierSpec("VIP", 2_500_000, 10)],
        admission_batch_size=batch,
        venue="Eko Convention Centre, Lagos",
        starts_at=now + timedelta(days=30),
        **fields,
    )
    event_activate(event_id=event.id)
    event.refresh_from_db()
    return event


def crowd(event, n: int) -> None:
    """``n`` customers join before ours (ahead of them in the line)."""
    from queueing.services import queue_join

    for _ in range(n):
        queue_join(event_id=event.id, customer_id=CustomerFactory().id)


def tick(event) -> int:
    return admission_tick_event(event_id=event.id).admitted


def join_from_the_page(driver: webdriver.Chrome, base_url: str, event, customer) -> None:
    """Signed in (directly), the customer joins the line on the waiting room's page."""
    sign_in_directly(driver, base_url, customer)
    driver.get(f"{base_url}/events/{event.id}/queue/")
    wait_panel(driver, "join")
    driver.find_element(By.ID, "join-button").click()
    wait_panel(driver, "waiting")


def sign_in_directly(driver: webdriver.Chrome, base_url: str, customer) -> None:
    """What the sign-in page leaves in the browser, without the emailed code
    (the journey test signs in through the page)."""
    token, expires_at = customer_token_issue(customer_id=customer.id, email=customer.email)
    driver.get(base_url + "/signin/")
    driver.execute_script(
        "localStorage.setItem('fq.session', JSON.stringify(arguments[0]));",
        {
            "token": token,
            "customer_id": str(customer.id),
            "expires_at": expires_at.isoformat(),
            "email": customer.email,
        },
    )
