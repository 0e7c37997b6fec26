"""Reserved seating in headless Chromium, on the real stack (live server,
daphne, the Redis channel layer): the customer picks seats on the map with
the mouse and the keyboard, watches another customer's hold grey a seat out
live, is told which seat was taken when someone else got it first (409
seats_unavailable) and gets the best seats available on a phone.
Screenshots: docs/img/seats-*."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from claims.models import Claim
from claims.services import claim_create
from events.services import TierSpec, event_activate, event_create
from inventory.seating.pushes import seat_deltas
from tests.browser.conftest import sign_in_directly, tick
from tests.support.browser import shot, text_of, wait_for, wait_panel
from tests.support.factories import CustomerFactory, OrganizerFactory
from tests.support.sales import admit_directly

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def seated_sale(*, rows: int = 8, per_row: int = 14):
    now = timezone.now()
    event = event_create(
        organizer=OrganizerFactory(),
        name="Burna Boy: Love, Damini",
        sale_start=now - timedelta(minutes=1),
        sale_end=now + timedelta(hours=2),
        tiers=[TierSpec.reserved(name="Stalls", price=1_500_000, rows=rows, seats_per_row=per_row)],
        admission_batch_size=10,
        max_tickets_per_customer=4,
        venue="Eko Convention Centre, Lagos",
        starts_at=now + timedelta(days=30),
    )
    event_activate(event_id=event.id)
    event.refresh_from_db()
    return event


def seat(driver, label: str):
    return driver.find_element(By.CSS_SELECTOR, f'#seat-map circle[data-label="{label}"]')


def seat_class(driver, label: str) -> str:
    return seat(driver, label).get_attribute("class") or ""


def to_the_claim_step(driver, stack, event, customer) -> None:
    sign_in_directly(driver, stack.url, customer)
    driver.get(f"{stack.url}/events/{event.id}/queue/")
    wait_panel(driver, "join")
    driver.find_element(By.ID, "join-button").click()
    wait_panel(driver, "waiting")
    wait_for(driver, lambda d: "Live" in text_of(d, "live"), what="the socket")
    assert tick(event) == 1
    wait_panel(driver, "admitted")
    wait_for(
        driver,
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "#seat-map circle")) > 0,
        what="the seat map",
    )


def someone_else_takes(event, labels: list[str]) -> Claim:
    other = admit_directly(event, [CustomerFactory()])[0]
    return claim_create(
        event_id=event.id,
        customer_id=other.customer.id,
        admission_token=other.token,
        tier_id=event.tiers.get().id,
        seats=labels,
    )


def test_pick_with_mouse_and_keyboard_and_watch_a_seat_go_live(desktop, stack):
    driver = desktop
    event = seated_sale()
    to_the_claim_step(driver, stack, event, CustomerFactory(email="tobi@example.test"))
    circles = driver.find_elements(By.CSS_SELECTOR, "#seat-map circle")
    assert len(circles) == 8 * 14
    assert seat(driver, "A-7").get_attribute("aria-label") == "Seat A-7, available"
    assert text_of(driver, "claim-button") == "Hold the best seat available"

    seat(driver, "C-7").click()
    assert "seat-picked" in seat_class(driver, "C-7")
    assert seat(driver, "C-7").get_attribute("aria-checked") == "true"
    # The keyboard: right moves along the row, Space picks; up goes a row nearer the stage.
    driver.switch_to.active_element.send_keys(Keys.ARROW_RIGHT)
    assert driver.switch_to.active_element.get_attribute("data-label") == "C-8"
    driver.switch_to.active_element.send_keys(Keys.SPACE)
    assert text_of(driver, "claim-button") == "Hold seats C-7 and C-8"
    assert "Your seats: C-7 and C-8." in text_of(driver, "seat-picks")
    driver.switch_to.active_element.send_keys(Keys.ARROW_UP)
    assert driver.switch_to.active_element.get_attribute("data-label") == "B-8"

    # Another customer holds D-7 and D-8: the map greys them out by itself.
    someone_else_takes(event, ["D-7", "D-8"])
    wait_for(driver, lambda d: "seat-held" in seat_class(d, "D-8"), what="D-8 greyed out")
    assert "held by another customer" in seat(driver, "D-7").get_attribute("aria-label")
    seat(driver, "D-7").click()  # not pickable
    assert "Seat D-7 is held by another customer." in text_of(driver, "seat-error")
    shot(driver, "seats-desktop")

    driver.find_element(By.ID, "claim-button").click()
    wait_panel(driver, "claim")
    assert "C-7 and C-8" in text_of(driver, "claim-quantity")
    claim = Claim.objects.get(event=event, customer__email="tobi@example.test")
    assert sorted(claim.seats) == ["C-7", "C-8"]


def test_a_seat_taken_first_by_someone_else_is_named_and_nothing_is_held(desktop, stack):
    driver = desktop
    event = seated_sale()
    to_the_claim_step(driver, stack, event, CustomerFactory(email="ada@example.test"))
    seat(driver, "A-7").click()
    seat(driver, "A-8").click()
    # The other customer is faster, and this page has not heard yet (the
    # deltas of this process are held back): the claim answers 409.
    held_back: list = []
    send, seat_deltas._send = seat_deltas._send, held_back.extend
    try:
        someone_else_takes(event, ["A-8"])
        driver.find_element(By.ID, "claim-button").click()
        wait_for(driver, lambda d: "just taken" in text_of(d, "seat-error"), what="the conflict")
    finally:
        seat_deltas._send = send
    assert text_of(driver, "seat-error") == (
        "Seat A-8 was just taken by someone else. Nothing is held: pick other seats on the map."
    )
    wait_for(driver, lambda d: "seat-held" in seat_class(d, "A-8"), what="A-8 greyed out")
    assert "seat-picked" in seat_class(driver, "A-7")  # the other pick stays
    assert text_of(driver, "claim-button") == "Hold seat A-7"
    assert not Claim.objects.filter(event=event, customer__email="ada@example.test").exists()
    shot(driver, "seats-conflict")

    driver.find_element(By.ID, "claim-button").click()
    wait_panel(driver, "claim")
    assert Claim.objects.get(event=event, customer__email="ada@example.test").seats == ["A-7"]


def test_best_available_on_a_phone_and_the_tickets_show_their_seats(phone, stack):
    driver = phone
    event = seated_sale(rows=20, per_row=30)
    someone_else_takes(event, ["A-14", "A-15", "A-16", "A-17"])  # the middle of row A
    to_the_claim_step(driver, stack, event, CustomerFactory(email="kemi@example.test"))
    wait_for(driver, lambda d: "seat-held" in seat_class(d, "A-15"), what="A-15 taken")
    assert driver.execute_script("return document.documentElement.scrollWidth") <= 390
    scroller = driver.find_element(By.ID, "seat-scroll")
    assert scroller.size["width"] <= 390
    for _ in range(3):
        driver.find_element(By.CSS_SELECTOR, "[data-zoom=in]").click()
    # Zoomed: the map is wider than its box, which scrolls (a finger pans it).
    assert driver.execute_script("return arguments[0].scrollWidth", scroller) > 1.5 * 360
    # A seat is big enough to tap at the last zoom step (about 8 mm).
    assert seat(driver, "A-1").size["width"] >= 24, seat(driver, "A-1").size
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", scroller)
    shot(driver, "seats-phone")

    Select(driver.find_element(By.ID, "quantity")).select_by_value("2")
    assert text_of(driver, "claim-button") == "Hold the best 2 seats available"
    driver.find_element(By.ID, "claim-button").click()
    wait_panel(driver, "claim")
    claim = Claim.objects.get(event=event, customer__email="kemi@example.test")
    assert len(claim.seats) == 2
    assert all(label.startswith("A-") for label in claim.seats), claim.seats  # row A, beside
    for label in claim.seats:
        assert label in text_of(driver, "claim-quantity")
    shot(driver, "seats-phone-held")

    driver.find_element(By.ID, "pay-button").click()
    wait_for(driver, lambda d: "/checkout/" in d.current_url, what="the sandbox checkout")
    driver.find_element(By.CSS_SELECTOR, 'form[action$="/pay"] button').click()
    wait_for(driver, lambda d: "/payments/return/" in d.current_url, what="the return page")
    wait_for(driver, lambda d: d.find_element(By.TAG_NAME, "h1").text == "Paid", 30, "Paid")
    driver.get(f"{stack.url}/events/{event.id}/queue/")
    wait_panel(driver, "confirmed")
    wait_for(driver, lambda d: "seat A-" in text_of(d, "ticket-list"), what="seats on tickets")
    for label in claim.seats:
        assert f"seat {label}" in text_of(driver, "ticket-list")
    shot(driver, "seats-phone-tickets")
