"""The time to choose in headless Chromium: the admitted panel warns when
little is left (a role="alert" box, before the time is up) and its one
extension gives as long again; once used, the page no longer offers it."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from queueing.models import QueueEntry
from tests.browser.conftest import join_from_the_page, sale, tick
from tests.support.browser import shot, text_of, wait_for, wait_panel
from tests.support.factories import CustomerFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# A little more than the page's warning (30 s before the end): it shows within seconds.
CHOOSE_SECONDS = 33


def seconds_left(driver) -> int:
    minutes, seconds = text_of(driver, "admission-countdown").split(":")
    return int(minutes) * 60 + int(seconds)


def test_the_page_warns_before_the_time_to_choose_ends_and_extends_it_once(phone, stack):
    driver = phone
    event = sale(tickets=5, admission_window_seconds=CHOOSE_SECONDS)
    customer = CustomerFactory(email="tolu@example.test")
    join_from_the_page(driver, stack.url, event, customer)
    assert tick(event) == 1
    wait_panel(driver, "admitted")
    warning = driver.find_element(By.ID, "time-warning")
    assert not warning.is_displayed()  # not while more than 30 s are left

    wait_for(driver, lambda d: d.find_element(By.ID, "time-warning").is_displayed(), 15, "warning")
    assert warning.get_attribute("role") == "alert"
    assert 20 <= seconds_left(driver) <= 30  # warned in time to act (WCAG 2.2.1: 20 s at least)
    assert "almost up" in text_of(driver, "time-warning-text")
    button = driver.find_element(By.ID, "extend-button")
    assert button.is_displayed() and button.text == "I need more time"
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
    shot(driver, "time-to-choose-1-warning")

    button.click()

    wait_for(driver, lambda d: not d.find_element(By.ID, "time-warning").is_displayed(), 10, "hid")
    assert seconds_left(driver) > CHOOSE_SECONDS
    entry = QueueEntry.objects.get(event=event, customer=customer)
    assert entry.status == "ADMITTED" and entry.extended_at is not None
    assert (entry.admission_expires_at - entry.admitted_at).total_seconds() > CHOOSE_SECONDS + 30
    wait_for(
        driver,
        lambda d: "more time" in d.find_element(By.ID, "announce").get_attribute("textContent"),
        5,
        "the screen reader told",
    )
    assert driver.find_element(By.ID, "claim-button").is_enabled()
    shot(driver, "time-to-choose-2-extended")

    # A refresh rebuilds the page from the server: the extension is used.
    driver.refresh()
    wait_panel(driver, "admitted")
    state = driver.execute_script(
        "return fetch(arguments[0], {headers: {Authorization: 'Bearer ' +"
        " JSON.parse(localStorage.getItem('fq.session')).token}}).then(r => r.json())",
        f"{stack.url}/api/v1/events/{event.id}/queue/position/",
    )
    assert state["admission_extendable"] is False
