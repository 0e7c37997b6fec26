"""Asking for more tickets than are left, in headless Chromium: the waiting
room says how many are and holds those with one tap, instead of "sold out"."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from claims.models import Claim
from claims.services import claim_create
from tests.browser.conftest import join_from_the_page, sale, tick
from tests.support.browser import shot, text_of, wait_for, wait_panel
from tests.support.factories import CustomerFactory
from tests.support.sales import admit_directly

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_the_page_offers_the_tickets_that_are_left(phone, stack):
    driver = phone
    event = sale(tickets=5, max_tickets_per_customer=4)
    regular = event.tiers.get(name="Regular")
    other = admit_directly(event, [CustomerFactory()])[0]
    claim_create(
        event_id=event.id,
        customer_id=other.customer.id,
        admission_token=other.token,
        tier_id=regular.id,
        quantity=3,
    )
    customer = CustomerFactory()
    join_from_the_page(driver, stack.url, event, customer)
    assert tick(event) == 1
    wait_panel(driver, "admitted")

    Select(driver.find_element(By.ID, "quantity")).select_by_value("3")
    driver.find_element(By.ID, "claim-button").click()

    wait_for(driver, lambda d: d.find_element(By.ID, "fewer-left").is_displayed(), what="offer")
    assert text_of(driver, "fewer-left-text") == "Only 2 left \u2014 take 2?"
    button = driver.find_element(By.ID, "fewer-left-button")
    assert button.text == "Hold these 2 tickets"
    assert text_of(driver, "room-error") == ""  # an offer, not an error
    # One primary (filled) button: the offer's; the form's own steps back.
    assert "secondary" not in (button.get_attribute("class") or "")
    assert "secondary" in driver.find_element(By.ID, "claim-button").get_attribute("class")
    assert text_of(driver, "sale-badge") == "On sale"
    assert Claim.objects.filter(customer=customer).count() == 0
    # The whole offer fits the phone's width, its button within reach.
    assert driver.execute_script("return document.documentElement.scrollWidth") <= 390
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
    shot(driver, "fewer-left-offer")

    button.click()

    wait_panel(driver, "claim")
    wait_for(driver, lambda d: text_of(d, "claim-quantity") == "2", what="2 tickets held")
    held = Claim.objects.get(customer=customer)
    assert (held.quantity, held.status, held.tier_id) == (2, "CLAIMED", regular.id)
    assert not driver.find_element(By.ID, "fewer-left").is_displayed()
