"""Around the happy path, in headless Chromium: a declined card keeps the
hold and offers "Try again"; the hold shows on every page; leaving the queue
asks first and says what happened; the turn calls a customer in another tab;
the estimate holds steady; the sign-in step survives a reload; a refunded
purchase reads once and its ticket looks void. Screenshots: docs/img/."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone
from selenium.webdriver.common.by import By

from claims.domain import ReleaseReason
from claims.models import Claim, IssuedTicket
from claims.services import claim_confirm, claim_release
from payments.models import Payment
from tests.browser.conftest import sale, sign_in_directly, tick
from tests.support.browser import new_tab, shot, text_of, wait_for, wait_panel
from tests.support.factories import CustomerFactory
from tests.support.sales import admit_directly, claim_one, pay

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

HOLD = re.compile(r"You hold 1 ticket for Detty December Live \u2014 pay within [0-9]+:[0-5][0-9]")


def holds_bar(driver) -> str:
    wait_for(driver, lambda d: d.find_element(By.ID, "fq-holds").is_displayed(), what="holds bar")
    return text_of(driver, "fq-holds")


def checkout(driver, action: str) -> None:
    wait_for(driver, lambda d: "/checkout/" in d.current_url, what="the sandbox checkout")
    driver.find_element(By.CSS_SELECTOR, f'form[action$="/{action}"] button').click()
    wait_for(driver, lambda d: "/payments/return/" in d.current_url, what="the return page")


def test_a_declined_card_keeps_the_hold_and_every_page_shows_it(desktop, stack):
    driver = desktop
    event = sale(tickets=10)
    customer = CustomerFactory()
    claim = claim_one(event.tiers.get(name="Regular"), admit_directly(event, [customer])[0])
    sign_in_directly(driver, stack.url, customer)

    # The buyer closed the tab: the hold shows on the home page, My tickets
    # and the event's page, and leads back to it.
    for path in ("/", "/tickets/", f"/events/{event.id}/"):
        driver.get(stack.url + path)
        assert HOLD.match(holds_bar(driver)), text_of(driver, "fq-holds")
    driver.get(stack.url + "/")
    holds_bar(driver)
    shot(driver, "holds-bar")
    driver.find_element(By.LINK_TEXT, "Go to your tickets").click()
    wait_panel(driver, "claim")
    assert driver.find_elements(By.ID, "fq-holds") == []  # the waiting room shows it itself

    # Declined at the checkout: the tickets stay held, the page offers "Try again".
    driver.find_element(By.ID, "pay-button").click()
    checkout(driver, "decline")
    wait_for(driver, lambda d: "did not go through" in d.page_source, what="declined")
    assert "still held" in driver.find_element(By.TAG_NAME, "main").text
    shot(driver, "decline-1-try-again")
    assert Claim.objects.get(pk=claim.pk).status == "CLAIMED"
    driver.find_element(By.LINK_TEXT, "Try again").click()
    wait_panel(driver, "claim")
    assert "Your tickets are still held" in text_of(driver, "room-notice")
    assert text_of(driver, "pay-button") == "Try again"
    shot(driver, "decline-2-held")

    driver.find_element(By.ID, "pay-button").click()
    checkout(driver, "pay")
    wait_for(driver, lambda d: d.find_element(By.TAG_NAME, "h1").text == "Paid", 30, "Paid")
    assert Claim.objects.get(pk=claim.pk).status == "CONFIRMED"
    assert sorted(Payment.objects.filter(claim=claim).values_list("status", flat=True)) == [
        "CONFIRMED",
        "FAILED",
    ]
    driver.get(stack.url + "/")
    wait_for(
        driver, lambda d: d.execute_script("return document.readyState") == "complete", what="home"
    )
    assert not driver.find_element(By.ID, "fq-holds").is_displayed()  # paid: no hold left


# The browser's Notification, recording what the page shows (a headless
# browser has no notification centre); the customer said yes.
RECORD_NOTIFICATIONS = """
window.shown = [];
function Recorder(title, options) { window.shown.push(title + ": " + options.body); }
Recorder.permission = "granted";
Recorder.requestPermission = () => Promise.resolve("granted");
window.Notification = Recorder;
"""


def test_leaving_asks_first_and_the_turn_calls_a_customer_in_another_tab(desktop, stack):
    driver = desktop
    event = sale(tickets=10, batch=10)
    sign_in_directly(driver, stack.url, CustomerFactory())
    driver.get(f"{stack.url}/events/{event.id}/queue/")
    wait_panel(driver, "join")
    driver.find_element(By.ID, "join-button").click()
    wait_panel(driver, "waiting")
    # Place 1 before any admission was measured: the next tick, not "Estimating".
    wait_for(driver, lambda d: text_of(d, "eta") == "Less than a minute.", what="the estimate")

    # A stray tap on "Leave the queue" is asked about, and "no" keeps the place.
    driver.find_element(By.ID, "leave-button").click()
    alert = driver.switch_to.alert
    assert "give up your place" in alert.text
    alert.dismiss()
    wait_panel(driver, "waiting")
    driver.find_element(By.ID, "leave-button").click()
    driver.switch_to.alert.accept()
    wait_panel(driver, "join")
    wait_for(
        driver, lambda d: "You left the queue" in text_of(d, "room-notice"), what="left notice"
    )
    shot(driver, "left-the-queue")

    driver.find_element(By.ID, "join-button").click()
    wait_panel(driver, "waiting")
    driver.execute_script(RECORD_NOTIFICATIONS)
    room = driver.current_window_handle
    other = new_tab(driver, stack.url + "/")  # the customer looks elsewhere
    assert other == room

    assert tick(event) == 1
    driver.switch_to.window(room)
    wait_panel(driver, "admitted")
    assert driver.title.startswith(("Your turn!", "\u23f0 Choose your tickets"))
    shown = driver.execute_script("return window.shown")
    assert len(shown) == 1 and re.fullmatch(
        r"Your turn!: Choose your tickets within [0-4]:[0-5]\d\.", shown[0]
    ), shown


def test_on_a_phone_the_sign_in_survives_a_reload_and_a_refund_reads_once(
    phone, stack, settings
):
    driver = phone
    settings.OTP_RESEND_SECONDS = 1
    driver.get(stack.url + "/signin/")
    wait_for(driver, lambda d: d.find_element(By.ID, "email-button").is_enabled(), what="form")
    driver.find_element(By.ID, "email").send_keys("ada@example.test")
    driver.find_element(By.ID, "email-button").click()
    wait_for(driver, lambda d: d.find_element(By.ID, "code-form").is_displayed(), what="code form")
    first = re.search(r"\b(\d{6})\b", mail.outbox[-1].body).group(1)

    # The phone reloads the page on the way back from the mail app.
    driver.refresh()
    wait_for(driver, lambda d: d.find_element(By.ID, "code-form").is_displayed(), what="code step")
    assert text_of(driver, "code-email") == "ada@example.test"
    shot(driver, "signin-after-reload")
    # Asking again (the first email was slow) keeps the first code good.
    resend = driver.find_element(By.ID, "resend-button")
    wait_for(driver, lambda d: resend.is_enabled(), what="resend")
    resend.click()
    wait_for(driver, lambda d: len(mail.outbox) == 2, what="the second code")
    driver.find_element(By.ID, "code").send_keys(first)
    driver.find_element(By.ID, "code-button").click()
    wait_for(driver, lambda d: d.current_url.rstrip("/") == stack.url, what="signed in")

    # A purchase of theirs, paid and then refunded by staff.
    event = sale(tickets=10)
    customer = CustomerFactory(email="grace@example.test")
    claim = claim_one(event.tiers.get(name="Regular"), admit_directly(event, [customer])[0])
    payment = pay(claim, status="CONFIRMED")
    claim_confirm(claim_id=claim.pk)
    claim_release(claim_id=claim.pk, reason=ReleaseReason.REFUNDED)
    Payment.objects.filter(pk=payment.pk).update(status="REFUNDED")
    Claim.objects.filter(pk=claim.pk).update(released_at=timezone.now() - timedelta(minutes=1))
    sign_in_directly(driver, stack.url, customer)

    driver.get(f"{stack.url}/events/{event.id}/queue/")
    wait_panel(driver, "join")
    assert text_of(driver, "room-notice") == "Your purchase was cancelled. Refunded."
    ticket = IssuedTicket.objects.get(claim=claim)
    driver.get(f"{stack.url}/tickets/{ticket.code}/")
    page = driver.find_element(By.TAG_NAME, "main").text
    assert "cancelled: not valid for entry" in page.lower()
    assert "Show this QR code at the door" not in page
    assert driver.find_elements(By.ID, "print-button") == []
    assert driver.find_elements(By.CSS_SELECTOR, ".qr") == []
    shot(driver, "ticket-void")
