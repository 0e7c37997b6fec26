"""A ticket's page on a phone (390x844), on the real stack: after one of
the order's two tickets was returned, resold and its refund paid back (the
sandbox gateway's refund webhook), the kept ticket's page says what the
order paid, what came back and what the organizer kept."""

from __future__ import annotations

import contextlib
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient
from selenium.webdriver.common.by import By

from payments.models import Refund
from tests.browser.conftest import sale
from tests.claims.resale_support import buy, return_ticket
from tests.support.browser import shot, wait_for
from tests.support.sales import admit_directly, make_customers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def on_commit(**_):
    return contextlib.nullcontext()  # a real commit runs its own callbacks


def test_the_ticket_page_says_what_the_order_paid_and_got_back(phone, stack, client):
    driver = phone
    event = sale(
        tickets=2,
        max_tickets_per_customer=2,
        returns_until=timezone.now() + timedelta(days=1),
        return_fee=50_000,
    )
    regular = event.tiers.get(name="Regular")
    seller_in, buyer_in = admit_directly(event, make_customers(2))
    api = APIClient()
    seller = buy(api, client, stack.sandbox, on_commit, regular, seller_in, quantity=2)
    kept, returned = seller.tickets()
    assert return_ticket(api, seller, returned, on_commit).status_code == 202
    buy(api, client, stack.sandbox, on_commit, regular, buyer_in)
    wait_for(
        driver,
        lambda d: Refund.objects.filter(status="PROCESSED", for_resale=True).exists(),
        30,
        "the refund processed at the gateway",
    )

    driver.get(f"{stack.url}/tickets/{kept.code}/")
    money = driver.find_element(By.CSS_SELECTOR, ".ticket-money").text

    assert "Paid\nNGN 10,000.00" in money
    assert "Refunded\nNGN 4,500.00" in money
    assert "Kept as a fee\nNGN 500.00" in money
    assert "Refund of NGN 4,500.00: paid back" in money
    assert driver.execute_script("return document.documentElement.scrollWidth") <= 390
    shot(driver, "ticket-money")
