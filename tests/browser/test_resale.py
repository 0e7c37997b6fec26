"""Returns and transfers on a phone (390x844), on the real stack: My tickets
returns a ticket (the refund and fee shown first), someone else buys it, the
page shows it resold and refunded (the sandbox gateway's refund webhook);
then a ticket sent by email and accepted by its recipient."""

from __future__ import annotations

import contextlib
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient
from selenium.webdriver.common.by import By

from claims.models import IssuedTicket
from payments.models import Refund
from tests.browser.conftest import sale, sign_in_directly
from tests.claims.resale_support import buy
from tests.support.browser import shot, wait_for
from tests.support.factories import CustomerFactory
from tests.support.sales import admit_directly, make_customers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def on_commit(**_):
    return contextlib.nullcontext()  # a real commit runs its own callbacks


def ticket_item(driver, code: str):
    return driver.find_element(By.CSS_SELECTOR, f'li[data-code="{code}"]')


def click(item, label: str) -> None:
    next(b for b in item.find_elements(By.TAG_NAME, "button") if b.text == label).click()


def test_return_resold_refunded_and_a_transfer(phone, stack, client):
    driver = phone
    event = sale(
        tickets=2,
        max_tickets_per_customer=2,
        returns_until=timezone.now() + timedelta(days=1),
        return_fee=50_000,
        transfers_allowed=True,
    )
    regular = event.tiers.get(name="Regular")
    seller_in, buyer_in = admit_directly(event, make_customers(2))
    api = APIClient()
    seller = buy(api, client, stack.sandbox, on_commit, regular, seller_in, quantity=2)
    kept, returned = seller.tickets()

    sign_in_directly(driver, stack.url, seller.customer)
    driver.get(stack.url + "/tickets/")
    wait_for(driver, lambda d: ticket_item(d, returned.code), what="the tickets")
    click(ticket_item(driver, returned.code), "Return for resale")
    wait_for(driver, lambda d: "4,500.00" in ticket_item(d, returned.code).text, what="the quote")
    assert "500.00 fee" in ticket_item(driver, returned.code).text
    shot(driver, "resale-1-confirm-return")
    click(ticket_item(driver, returned.code), "Confirm return")
    wait_for(
        driver,
        lambda d: "Withdraw return" in ticket_item(d, returned.code).text,
        what="on resale",
    )
    assert "On resale" in ticket_item(driver, returned.code).text

    # Someone else, admitted from the line, buys the returned ticket.
    buy(api, client, stack.sandbox, on_commit, regular, buyer_in)
    wait_for(
        driver,
        lambda d: Refund.objects.filter(status="PROCESSED", for_resale=True).exists(),
        30,
        "the refund processed at the gateway",
    )
    driver.refresh()
    wait_for(
        driver,
        lambda d: "paid back to your card" in ticket_item(d, returned.code).text,
        what="resold and refunded",
    )
    assert "Resold" in ticket_item(driver, returned.code).text
    shot(driver, "resale-2-resold-refunded")
    # Had the card refused it, the page says the refund is late, not on its way.
    Refund.objects.filter(for_resale=True).update(status="FAILED")
    driver.refresh()
    wait_for(
        driver,
        lambda d: "delayed, your card did not take it" in ticket_item(d, returned.code).text,
        what="a refund the card refused",
    )
    Refund.objects.filter(for_resale=True).update(status="PROCESSED")

    friend = CustomerFactory(email="friend@example.test")
    click(ticket_item(driver, kept.code), "Send to someone")
    ticket_item(driver, kept.code).find_element(By.NAME, "transfer-email").send_keys(friend.email)
    click(ticket_item(driver, kept.code), "Send ticket")
    wait_for(driver, lambda d: "waiting for them" in ticket_item(d, kept.code).text, what="sent")
    driver.execute_script("localStorage.clear();")
    sign_in_directly(driver, stack.url, friend)
    driver.get(stack.url + "/tickets/")
    wait_for(driver, lambda d: d.find_element(By.ID, "incoming").is_displayed(), what="incoming")
    shot(driver, "transfer-1-sent-to-you")
    click(driver.find_element(By.ID, "incoming"), "Accept ticket")
    wait_for(
        driver,
        lambda d: (
            IssuedTicket.objects.filter(customer=friend, status="VALID").exists()
            and not d.find_element(By.ID, "incoming").is_displayed()
        ),
        what="accepted",
    )
    (theirs,) = IssuedTicket.objects.filter(customer=friend)
    wait_for(driver, lambda d: ticket_item(d, theirs.code).text, what="their ticket")
    assert "Valid" in ticket_item(driver, theirs.code).text
    # No "Return for resale", and the page says why.
    assert "You were sent this ticket, so it cannot be returned for a refund" in (
        ticket_item(driver, theirs.code).text
    )
    shot(driver, "transfer-2-accepted")
    kept.refresh_from_db()
    assert (kept.status, kept.void_reason) == ("VOID", "transferred")
