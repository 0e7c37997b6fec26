"""The waiting room in headless Chromium: on a 390x844 phone (refresh and a
new tab keep the place), a countdown that opens the room by itself, and a
socket that drops (the notice says so; polling carries the admission; the
page goes live again when the socket is back), and a pre-queue page that
learns its drawn number from the draw's public document. Screenshots:
docs/img/."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from selenium.webdriver.common.by import By

from events.models import Event
from queueing.models import QueueEntry
from queueing.services import admission_tick_event
from tests.browser.conftest import crowd, join_from_the_page, sale, sign_in_directly, tick
from tests.support.browser import new_tab, shot, text_of, wait_for, wait_panel
from tests.support.factories import CustomerFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_on_a_phone_the_place_survives_a_refresh_and_a_new_tab(phone, stack):
    driver = phone
    event = sale(tickets=500, batch=20)
    crowd(event, 140)
    join_from_the_page(driver, stack.url, event, CustomerFactory(email="kemi@example.test"))
    wait_for(driver, lambda d: text_of(d, "position") == "141", what="place 141")
    wait_for(driver, lambda d: "Live" in text_of(d, "live"), what="the socket")
    assert tick(event) == 20
    assert tick(event) == 20
    # 101 back, five ticks from the head: the socket stays quiet (news only
    # near the head) and the page reads the public line state on its own
    # timer, at most 30 s apart this far back.
    wait_for(driver, lambda d: text_of(d, "position") == "101", 40, "place 101")
    # Everything that matters fits the first screen of a phone.
    big = driver.find_element(By.ID, "position")
    assert big.location["y"] + big.size["height"] < 844 / 2
    assert driver.execute_script("return document.documentElement.scrollWidth") <= 390
    bar = driver.find_element(By.ID, "progress-bar").get_attribute("aria-valuenow")
    assert bar == "29", bar  # (141 - 101) / 140
    shot(driver, "phone-1-waiting")

    driver.refresh()
    wait_panel(driver, "waiting")
    wait_for(driver, lambda d: text_of(d, "position") == "101", what="101 after a refresh")
    assert driver.find_element(By.ID, "progress-bar").get_attribute("aria-valuenow") == "29"

    new_tab(driver, f"{stack.url}/events/{event.id}/queue/")
    wait_panel(driver, "waiting")
    wait_for(driver, lambda d: text_of(d, "position") == "101", what="101 in a new tab")
    for _ in range(6):  # 100 ahead, 20 a tick: ours in the sixth
        tick(event)
    wait_panel(driver, "admitted")
    shot(driver, "phone-2-your-turn")
    driver.find_element(By.ID, "claim-button").click()
    wait_panel(driver, "claim")
    shot(driver, "phone-3-tickets-held")


def test_the_countdown_opens_the_waiting_room_by_itself(desktop, stack):
    driver = desktop
    event = sale(starts_in=6, name="Asake: Lungu Boy Tour")
    sign_in_directly(driver, stack.url, CustomerFactory())

    driver.get(f"{stack.url}/events/{event.id}/queue/")
    wait_panel(driver, "upcoming")
    assert driver.find_element(By.ID, "sale-badge").text == "Opens soon"
    assert re.fullmatch(r"0:0[0-6]", text_of(driver, "opens-countdown")), text_of(
        driver, "opens-countdown"
    )
    # In the customer's own time zone (the browser's: Lagos, WAT = UTC+1).
    opens_at = text_of(driver, "opens-at")
    assert "GMT+1" in opens_at or "WAT" in opens_at, opens_at
    shot(driver, "countdown-1-before")

    wait_panel(driver, "join", timeout=25)  # no reload: the page switched by itself
    assert driver.find_element(By.ID, "sale-badge").text == "On sale"
    shot(driver, "countdown-2-open")


def test_a_dropped_socket_says_so_and_polling_carries_the_admission(desktop, stack):
    driver = desktop
    event = sale(batch=10)
    crowd(event, 2)
    join_from_the_page(driver, stack.url, event, CustomerFactory())
    wait_for(driver, lambda d: "Live" in text_of(d, "live"), what="the socket")

    stack.daphne.stop()
    wait_for(driver, lambda d: "Reconnecting" in text_of(d, "live"), what="the notice")
    assert "Your place is kept" in text_of(driver, "live")
    shot(driver, "socket-drop-1-reconnecting")

    assert tick(event) == 3  # pushed to nobody: the socket is down
    # The line state read after the tick says the frontier passed our score:
    # one GET queue/position/ brings the token.
    wait_panel(driver, "admitted", timeout=30)

    stack.daphne.start()  # same port
    wait_for(driver, lambda d: "Live" in text_of(d, "live"), 40, "the socket back")
    shot(driver, "socket-drop-2-admitted-and-live")


# Every request the page sends from now on: fetch calls (with or without the
# customer token) and socket messages.
RECORD_REQUESTS = """
window.__sent = [];
const fetch0 = window.fetch;
window.fetch = (url, init) => {
  const headers = (init && init.headers) || {};
  window.__sent.push({ url: String(url), signed: Boolean(headers.Authorization) });
  return fetch0(url, init);
};
const send0 = WebSocket.prototype.send;
WebSocket.prototype.send = function (data) {
  window.__sent.push({ url: "socket", signed: true, data: String(data) });
  return send0.call(this, data);
};
"""


def test_after_the_draw_a_pre_queue_page_reads_its_number_from_the_draw_without_asking(
    desktop, stack
):
    driver = desktop
    now = timezone.now()
    event = sale(starts_in=3600, batch=10, prequeue_opens_at=now - timedelta(minutes=5))
    crowd(event, 29)
    customer = CustomerFactory()
    join_from_the_page(driver, stack.url, event, customer)
    wait_for(driver, lambda d: text_of(d, "position") == "30", what="place 30, the join order")
    wait_for(driver, lambda d: "Live" in text_of(d, "live"), what="the socket")

    driver.execute_script(RECORD_REQUESTS)
    # The sale starts paused: the first tick draws the pre-queue and admits nobody.
    Event.objects.filter(pk=event.pk).update(sale_start=timezone.now(), status="PAUSED")
    assert admission_tick_event(event_id=event.id).shuffled == 30
    rank = QueueEntry.objects.get(event=event, customer=customer).score

    def drawn_place(d):
        read = any("/queue/draw/" in s["url"] for s in d.execute_script("return window.__sent;"))
        return read and text_of(d, "position") == str(rank)

    wait_for(driver, drawn_place, 15, f"the draw's document read, the drawn place {rank}")
    sent = driver.execute_script("return window.__sent;")
    assert len([s for s in sent if "/queue/draw/" in s["url"]]) == 1, sent
    # Its number came from the public document: nothing signed, nothing over the socket.
    assert [s for s in sent if s["signed"]] == [], sent

    Event.objects.filter(pk=event.pk).update(status="ACTIVE")
    for _ in range((rank + 9) // 10):  # ten a tick: ours in the last
        tick(event)
    wait_panel(driver, "admitted", timeout=15)
