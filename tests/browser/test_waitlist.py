"""The waiting list on a phone, in headless Chromium: a sold-out event's
page offers the list, shows the place, turns into "It is your turn" for the
one ticket offered when one comes back, and the customer pays for it; after
the sale, while returns are open, the same for a returned ticket."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone
from selenium.webdriver.common.by import By

from claims.domain import ReleaseReason
from claims.models import Claim, IssuedTicket
from claims.services import claim_confirm, claim_release, ticket_return
from events.models import Event
from events.services import events_end_due
from ledger.domain import charge_moves
from ledger.services import account_post
from queueing.domain import WaitlistStatus
from queueing.models import WaitlistEntry, WaitlistState
from queueing.services.waitlist_offers import waitlist_tick_event
from tests.browser.conftest import sale, sign_in_directly
from tests.support.browser import shot, text_of, wait_for, wait_panel
from tests.support.factories import CustomerFactory
from tests.support.sales import admit_directly, claim_one

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def held_by_someone(event, tier):
    """A customer admitted and holding one ticket of ``tier``: their claim."""
    (holder,) = admit_directly(event, [CustomerFactory()])
    return claim_one(tier, holder)


def list_drawn(event) -> None:
    """The waiting list opened two minutes ago: its first minute is drawn."""
    opened = timezone.now() - timedelta(minutes=2)
    WaitlistState.objects.create(event_id=event.id, opened_at=opened, drawn_at=opened)


def first_on_the_list(driver, stack, event):
    """A new customer opens the event's page, joins the list and is first."""
    customer = CustomerFactory()
    sign_in_directly(driver, stack.url, customer)
    driver.get(f"{stack.url}/events/{event.id}/queue/")
    wait_for(driver, lambda d: d.find_element(By.ID, "waitlist-join").is_displayed(), what="join")
    assert not driver.find_element(By.ID, "join-button").is_displayed()  # not the line's join
    driver.find_element(By.ID, "waitlist-join").click()
    wait_for(driver, lambda d: text_of(d, "waitlist-place") == "1", what="place 1")
    return customer


def test_on_a_phone_the_waiting_list_offers_a_ticket_that_is_paid_for(phone, stack):
    driver = phone
    event = sale(tickets=1)
    regular, vip = event.tiers.get(name="Regular"), event.tiers.get(name="VIP")
    held = [held_by_someone(event, regular), held_by_someone(event, vip)]
    Event.objects.filter(pk=event.pk).update(status="SOLD_OUT")
    list_drawn(event)

    customer = first_on_the_list(driver, stack, event)
    assert "next ticket" in text_of(driver, "waitlist-ahead")
    assert driver.execute_script("return document.documentElement.scrollWidth") <= 390
    shot(driver, "waitlist-1-place")

    claim_release(claim_id=held[0].id, reason=ReleaseReason.CUSTOMER)  # a ticket comes back
    driver.refresh()  # the page asks every 15 s; a refresh asks at once
    wait_panel(driver, "admitted")
    wait_for(
        driver,
        lambda d: d.find_element(By.ID, "waitlist-offer-until").text != "",
        what="the offer",
    )
    # The claim step keeps the tier offered, one ticket.
    labels = driver.find_elements(By.CSS_SELECTOR, "#claim-form label.choice")
    assert [label.is_displayed() for label in labels] == [True, False]
    assert not driver.find_element(By.ID, "quantity").is_enabled()
    shot(driver, "waitlist-2-offer")

    driver.find_element(By.ID, "claim-button").click()
    wait_panel(driver, "claim")
    driver.find_element(By.ID, "pay-button").click()
    wait_for(driver, lambda d: "/checkout/" in d.current_url, what="the sandbox checkout")
    driver.find_element(By.CSS_SELECTOR, 'form[action$="/pay"] button').click()
    wait_for(driver, lambda d: "/payments/return/" in d.current_url, what="the return page")
    wait_for(driver, lambda d: d.find_element(By.TAG_NAME, "h1").text == "Paid", 30, "Paid")
    claim = Claim.objects.get(customer=customer)
    assert (claim.status, claim.tier_id, claim.quantity) == ("CONFIRMED", regular.id, 1)
    shot(driver, "waitlist-3-paid")


# Before the page's scripts: its reads of ``.../me/`` answer 1.5 s late.
SLOW_ME = """
const fetchNow = window.fetch;
window.fetch = (url, options) => String(url).split("?")[0].endsWith("/me/")
  ? new Promise((done) => setTimeout(done, 1500)).then(() => fetchNow(url, options))
  : fetchNow(url, options);
"""


def test_a_page_opened_on_an_offer_shows_it_and_stays(phone, stack):
    """The offer was made before the page opened: the page shows "It is your
    turn" for it and stays there, though its read of the list may answer
    before its own read of the admission (it must not reload in a loop)."""
    driver = phone
    event = sale(tickets=1)
    held = held_by_someone(event, event.tiers.get(name="Regular"))
    Event.objects.filter(pk=event.pk).update(status="SOLD_OUT")
    list_drawn(event)
    customer = first_on_the_list(driver, stack, event)
    claim_release(claim_id=held.id, reason=ReleaseReason.CUSTOMER)
    wait_for(
        driver,
        lambda d: WaitlistEntry.objects.filter(
            customer=customer, status=WaitlistStatus.OFFERED
        ).exists(),
        what="the offer in Postgres",
    )

    # The page's own read of the customer's state answers after its read of
    # the list (a slow network, a busy server): the race, made certain.
    slow_me = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": SLOW_ME})
    try:
        driver.get(f"{stack.url}/events/{event.id}/queue/")
        wait_panel(driver, "admitted")
        wait_for(driver, lambda d: text_of(d, "waitlist-offer-until") != "", what="the offer")
        driver.execute_script("window.stillHere = true;")
        time.sleep(4)  # longer than the page waits for its own read before it reloads
        assert driver.execute_script("return window.stillHere === true;"), "the page reloaded"
        assert text_of(driver, "waitlist-offer-until") != ""
    finally:
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", slow_me)


def test_after_the_sale_the_page_offers_the_list_and_a_returned_ticket(phone, stack):
    """The sale has ended, returns are open: the page offers the waiting
    list, and a ticket returned then is the customer's to claim."""
    driver = phone
    event = sale(tickets=1, returns_until=timezone.now() + timedelta(days=1))
    regular = event.tiers.get(name="Regular")
    bought = held_by_someone(event, regular)
    claim_confirm(claim_id=bought.id)
    # Paid for, as its payment's confirmation writes it in the purchase's account.
    account_post(
        claim_id=bought.id,
        moves=charge_moves(amount=bought.amount, tickets=bought.quantity),
        currency=bought.currency,
        actor="test",
    )
    Event.objects.filter(pk=event.pk).update(sale_end=timezone.now() - timedelta(seconds=1))
    events_end_due()
    list_drawn(event)

    customer = first_on_the_list(driver, stack, event)

    (ticket,) = IssuedTicket.objects.filter(claim=bought)
    ticket_return(code=ticket.code, customer_id=bought.customer_id)
    waitlist_tick_event(event_id=event.id)
    driver.refresh()
    wait_panel(driver, "admitted")
    driver.find_element(By.ID, "claim-button").click()
    wait_panel(driver, "claim")
    claim = Claim.objects.get(customer=customer)
    assert (claim.status, claim.tier_id) == ("CLAIMED", regular.id)
