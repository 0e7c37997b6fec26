"""The whole journey in headless Chromium, from sign-in to a ticket with a QR
code: the sign-in page and its emailed code, the waiting room (its own
page), the line moving over the WebSocket, admission, holding tickets,
refresh and a new tab keeping the hold, the sandbox checkout, the return
page (status only), My tickets, the tickets in the waiting room, the ticket page, the email, and the
door checking the code in (once). Screenshots of each state: docs/img/."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from django.test import Client
from selenium.webdriver.common.by import By

from claims.models import Claim, IssuedTicket
from events.management.commands.bootstrap_demo import ensure_organizer_group
from tests.browser.conftest import crowd, sale, tick
from tests.support.browser import new_tab, shot, text_of, visible_panel, wait_for, wait_panel
from tests.support.factories import UserFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

EMAIL = "ada@example.test"


def sign_in_through_the_page(driver, stack, event) -> None:
    driver.get(f"{stack.url}/events/{event.id}/queue/")
    wait_panel(driver, "signin")
    shot(driver, "journey-1-sign-in-to-join")
    driver.find_element(By.ID, "signin-link").click()
    wait_for(
        driver, lambda d: d.find_element(By.ID, "email-button").is_enabled(), what="sign-in form"
    )
    driver.find_element(By.ID, "email").send_keys(EMAIL)
    driver.find_element(By.ID, "email-button").click()
    wait_for(driver, lambda d: d.find_element(By.ID, "code-form").is_displayed(), what="code form")
    code = re.search(r"\b(\d{6})\b", mail.outbox[-1].body).group(1)
    driver.find_element(By.ID, "code").send_keys(code)
    driver.find_element(By.ID, "code-button").click()
    wait_for(
        driver, lambda d: d.current_url.endswith(f"/events/{event.id}/queue/"), what="redirect"
    )


def test_from_sign_in_to_a_ticket_with_a_qr_code(desktop, stack):
    driver = desktop
    event = sale(tickets=100, batch=10)
    regular = event.tiers.get(name="Regular")
    crowd(event, 25)

    sign_in_through_the_page(driver, stack, event)
    wait_panel(driver, "join")
    driver.find_element(By.ID, "join-button").click()
    wait_panel(driver, "waiting")
    wait_for(driver, lambda d: text_of(d, "position") == "26", what="place 26")
    assert text_of(driver, "ahead") == "25 people ahead of you."
    wait_for(driver, lambda d: "Live" in text_of(d, "live"), what="the socket")

    # The line moves: one broadcast per tick, the page subtracts.
    assert tick(event) == 10
    wait_for(driver, lambda d: text_of(d, "position") == "16", what="place 16")
    assert driver.find_element(By.ID, "progress-bar").get_attribute("aria-valuenow") == "40"
    eta = text_of(driver, "eta")
    assert (eta and "minute" in eta) or "Less than" in eta, eta
    shot(driver, "journey-2-waiting")

    # A refresh rebuilds the page from the server: same place, same start.
    driver.refresh()
    wait_panel(driver, "waiting")
    wait_for(driver, lambda d: text_of(d, "position") == "16", what="place 16 after a refresh")

    assert tick(event) == 10
    wait_for(driver, lambda d: text_of(d, "position") == "6", what="place 6")
    assert tick(event) == 6  # the last six, ours among them
    wait_panel(driver, "admitted")
    assert re.fullmatch(r"[0-4]:\d\d", text_of(driver, "admission-countdown"))
    shot(driver, "journey-3-your-turn")

    driver.find_element(By.ID, "claim-button").click()
    wait_panel(driver, "claim")
    assert text_of(driver, "claim-tier") == "Regular"
    assert text_of(driver, "claim-amount") == "NGN 5,000.00"
    shot(driver, "journey-4-tickets-held")

    # The hold survives a refresh and shows in a new tab (no storage but the sign-in).
    driver.refresh()
    wait_panel(driver, "claim")
    first_tab = new_tab(driver, f"{stack.url}/events/{event.id}/queue/")
    wait_panel(driver, "claim")
    driver.close()
    driver.switch_to.window(first_tab)

    driver.find_element(By.ID, "pay-button").click()
    wait_for(driver, lambda d: "/checkout/" in d.current_url, what="the sandbox checkout")
    shot(driver, "journey-5-sandbox-checkout")
    driver.find_element(By.CSS_SELECTOR, 'form[action$="/pay"] button').click()
    wait_for(driver, lambda d: "/payments/return/" in d.current_url, what="the return page")
    wait_for(driver, lambda d: d.find_element(By.TAG_NAME, "h1").text == "Paid", 30, "Paid")
    assert driver.find_elements(By.CSS_SELECTOR, ".ticket") == []  # the reference shows none
    # The buyer signed in on this browser reads the purchase: codes, seats, total.
    paid = driver.find_element(By.ID, "paid-tickets")
    wait_for(driver, lambda d: paid.is_displayed(), what="the tickets paid for")
    (code,) = [li.get_attribute("data-code") for li in paid.find_elements(By.TAG_NAME, "li")]
    assert "Total paid: NGN 5,000.00" in paid.text and code in paid.text
    shot(driver, "journey-6-paid")
    # The tickets come with the sign-in: My tickets.
    driver.find_element(By.LINK_TEXT, "See your tickets").click()
    wait_for(
        driver,
        lambda d: d.execute_script(
            "const i = document.querySelector('#ticket-list img'); return i && i.naturalWidth;"
        ),
        what="the ticket's QR code on My tickets",
    )

    claim = Claim.objects.get(event=event, status="CONFIRMED")
    ticket = IssuedTicket.objects.get(claim=claim)
    assert claim.tier_id == regular.id

    # The waiting room now shows the ticket, from GET me/.
    driver.get(f"{stack.url}/events/{event.id}/queue/")
    wait_panel(driver, "confirmed")
    wait_for(
        driver,
        lambda d: d.execute_script(
            "const i = document.querySelector('#ticket-list img'); return i && i.naturalWidth;"
        ),
        what="the ticket's QR code",
    )
    assert "NGN 5,000.00 paid" in text_of(driver, "receipt")
    shot(driver, "journey-7-your-tickets")

    driver.find_element(By.CSS_SELECTOR, "#ticket-list a").click()
    wait_for(driver, lambda d: "/tickets/" in d.current_url, what="the ticket page")
    svg = driver.find_element(By.CSS_SELECTOR, ".qr svg")
    assert svg.size["width"] >= 200
    assert ticket.code[:4] in driver.find_element(By.CSS_SELECTOR, ".big-code").text
    shot(driver, "journey-8-ticket")

    (confirmation,) = [m for m in mail.outbox if m.subject.startswith("Your tickets for")]
    assert confirmation.to == [EMAIL]
    assert ticket.code[:4] in confirmation.body

    # The door: an organizer member signed in to the admin scans the code twice.
    user = UserFactory(password=None)
    user.groups.add(ensure_organizer_group())
    event.organizer.members.add(user)
    admin = Client()
    admin.force_login(user)
    driver.get(stack.url + "/")
    driver.add_cookie({"name": "sessionid", "value": admin.cookies["sessionid"].value, "path": "/"})
    driver.get(f"{stack.url}/events/{event.id}/check-in/")
    for attempt in ("Welcome in", "Already used"):
        driver.find_element(By.ID, "code").send_keys(ticket.code.lower())
        driver.find_element(By.ID, "checkin-button").click()
        wait_for(driver, lambda d, a=attempt: text_of(d, "checkin-verdict") == a, what=attempt)
        if attempt == "Welcome in":  # general admission: the ticket's number, no seat
            assert " · ticket 1 · " in text_of(driver, "checkin-detail")
        shot(driver, "journey-9-door-" + attempt.split()[0].lower())
    assert "Checked in" in text_of(driver, "checkin-detail")
    assert IssuedTicket.objects.get(pk=ticket.pk).status == "USED"
    assert visible_panel(driver) is None  # not the waiting room
