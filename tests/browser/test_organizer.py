"""The organizer running their own sale in headless Chromium, on the real
stack: refunding an order from its page (the refund page says what happens
first, the sandbox gateway gets the refund), reading the waiting list and
the returns, the event page's tier table within 1280 px, the live dashboard on
a 390 px phone, and the door saying why there is no camera. Screenshots:
docs/img/."""

from __future__ import annotations

import contextlib
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient
from selenium.webdriver.common.by import By

from claims.models import Claim, IssuedTicket
from payments.models import Refund
from queueing.models import QueueEntry, WaitlistEntry
from tests.browser.conftest import sale
from tests.browser.test_console import a_sale_twenty_minutes_in, signed_in
from tests.claims.resale_support import buy, return_ticket
from tests.support.after_sale import on_waitlist
from tests.support.browser import chromium, csp_violations, shot, text_of, wait_for
from tests.support.factories import CustomerFactory
from tests.support.sales import admit_directly, make_customers, organizer_login

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def on_commit(**_):
    return contextlib.nullcontext()  # a real commit runs its own callbacks


def fits(driver) -> bool:
    """Nothing wider than the screen: no sideways scrolling (a phone lays a
    wider page out wider and zooms out, so its own width is the measure)."""
    width = driver.fq_viewport[0]
    return driver.execute_script(
        "return document.documentElement.scrollWidth <= arguments[0] + 1", width
    )


def offered_to(event, tier, *, until) -> WaitlistEntry:
    """A waiting-list entry with an open offer (its admission) until ``until``."""
    customer, now = CustomerFactory(), timezone.now()
    admission = QueueEntry.objects.create(
        event=event, customer=customer, status="ADMITTED", score=10_000, joined_at=now,
        admitted_at=now, admission_expires_at=until,
    )  # fmt: skip
    return WaitlistEntry.objects.create(
        event=event, customer=customer, tier=tier, status="offered", score=10_000,
        offered_at=now, offer_tier=tier, queue_entry=admission,
    )  # fmt: skip


def test_an_organizer_refunds_an_order_and_reads_the_waiting_list_and_returns(
    desktop, stack, client
):
    driver = desktop
    admin, _, organizer = organizer_login()
    event = sale(
        tickets=6, max_tickets_per_customer=2, organizer=organizer, name="Detty December Live",
        returns_until=timezone.now() + timedelta(days=1), return_fee=50_000,
    )  # fmt: skip
    regular = event.tiers.get(name="Regular")
    buyer_in, returner_in = admit_directly(event, make_customers(2))
    api = APIClient()
    buyer = buy(api, client, stack.sandbox, on_commit, regular, buyer_in, quantity=2)
    returner = buy(api, client, stack.sandbox, on_commit, regular, returner_in)
    assert return_ticket(api, returner, returner.tickets()[0], on_commit).status_code == 202
    on_waitlist(event, regular, n=3)
    on_waitlist(event, None, n=2)
    offered_to(event, regular, until=timezone.now() + timedelta(minutes=2))
    signed_in(driver, stack.url, admin)

    # The order's page offers the refund; the refund page says what it does.
    driver.get(f"{stack.url}/admin/console/order/{buyer.claim.pk}/change/")
    driver.find_element(By.XPATH, "//button[normalize-space()='Refund this order…']").click()
    plan = wait_for(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".fq-refund-plan"))
    assert "Refunds NGN 10,000.00" in plan.text
    assert Refund.objects.count() == 0
    driver.find_element(By.NAME, "reason").send_keys("The show moved to a smaller hall")
    shot(driver, "console-order-refund")
    driver.find_element(By.CSS_SELECTOR, 'input[type="submit"][value="Refund"]').click()
    said = wait_for(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".messagelist .success"))
    assert said.text.startswith(f"Refunds asked for: {str(buyer.claim.pk)[:8]} (NGN 10,000.00, ")
    (at_gateway,) = stack.sandbox.refunds_of(buyer.payment.reference)
    assert at_gateway["amount"] == 1_000_000
    assert Claim.objects.get(pk=buyer.claim.pk).status == "RELEASED"
    assert set(IssuedTicket.objects.filter(claim=buyer.claim).values_list("status", flat=True)) == {
        "VOID"
    }

    # Who waits, and who returned a ticket: their own event's, read-only.
    driver.get(f"{stack.url}/admin/console/waitinglistentry/?o=1")
    rows = driver.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
    assert len(rows) == 6
    assert "offered 1 x Regular, open until " in driver.find_element(By.ID, "result_list").text
    assert fits(driver)
    shot(driver, "console-waiting-list")
    driver.get(f"{stack.url}/admin/console/return/")
    (row,) = driver.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
    assert "on resale since" in row.text and "NGN 4,500.00 once resold" in row.text
    assert fits(driver)
    shot(driver, "console-returns")

    # The event's page: its tier table fits the window.
    driver.get(f"{stack.url}/admin/events/event/{event.pk}/change/")
    wait_for(driver, lambda d: d.find_element(By.ID, "tiers-group"))
    assert fits(driver), "the event page scrolls sideways at 1280 px"
    assert "NGN" in driver.find_element(By.CSS_SELECTOR, "#tiers-group .fq-currency").text


def test_the_live_dashboard_on_a_phone(phone, live_server):
    driver = phone
    client, _, organizer = organizer_login()
    event = a_sale_twenty_minutes_in(organizer)
    signed_in(driver, live_server.url, client)

    driver.get(f"{live_server.url}/admin/events/event/{event.id}/dashboard/")
    wait_for(
        driver,
        lambda d: d.find_elements(By.CSS_SELECTOR, "#fq-chart-sold canvas"),
        what="the sold chart",
    )

    assert fits(driver), "the dashboard scrolls sideways on a 390 px phone"
    for chart in ("sold", "waiting", "admitted"):
        width = driver.find_element(By.ID, f"fq-chart-{chart}").size["width"]
        assert width <= 390
    shot(driver, "console-dashboard-phone")


def test_the_door_says_why_there_is_no_camera(live_server):
    client, _, organizer = organizer_login()
    event = sale(tickets=10, organizer=organizer)
    with chromium(390, 844) as driver:  # no camera at all
        signed_in(driver, live_server.url, client)
        driver.get(f"{live_server.url}/events/{event.id}/check-in/")

        note = wait_for(
            driver, lambda d: d.find_element(By.ID, "camera-unavailable"), what="the note"
        )
        wait_for(driver, lambda d: note.is_displayed(), what="the note shown")

        assert text_of(driver, "camera-unavailable").startswith(
            "Camera unavailable: this page needs https and a camera (no camera was found)."
        )
        assert not driver.find_element(By.ID, "camera-button").is_enabled()
        assert driver.find_element(By.ID, "code").is_displayed()  # the typed code still works
        shot(driver, "door-no-camera")
        assert csp_violations(driver) == []
