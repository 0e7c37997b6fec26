"""The organizer's console in headless Chromium: the live dashboard (its
charts drawn and redrawn as the sale goes on, only the lines with data, no
link the organizer may not follow; after the sell-out, returns, resale refunds
and the waiting list) and an order a person can read; and the
door checking a ticket in through the phone's camera (a fake camera showing
the ticket's QR code) with its running count; staff warned before refunding
a ticket that came in. Screenshots: docs/img/."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
import segno
from django.db.models import DateTimeField, ExpressionWrapper, F, Value
from django.test import Client
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from claims.domain import ticket_code_display
from claims.models import Claim, IssuedTicket
from claims.services import issued_ticket_check_in, issued_tickets_issue
from inventory.models import Ticket
from payments.models import Payment
from queueing.models import QueueEntry
from tests.browser.conftest import sale
from tests.support.after_sale import on_waitlist, returned
from tests.support.browser import chromium, csp_violations, shot, text_of, wait_for
from tests.support.factories import CustomerFactory, UserFactory
from tests.support.sales import hold_tickets, organizer_login, pay, sell

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def signed_in(driver, base_url: str, client) -> None:
    """The admin session of ``client``'s user in the browser."""
    driver.get(base_url + "/static/favicon.svg")
    session = client.cookies["sessionid"].value
    driver.add_cookie({"name": "sessionid", "value": session, "path": "/"})


def a_sale_twenty_minutes_in(organizer):
    """300 joined in the first minutes, admitted ten a minute, about two
    tickets sold a minute; one payment stuck."""
    event = sale(tickets=100, starts_in=-20 * 60, organizer=organizer)
    opened, regular = event.sale_start, event.tiers.get(name="Regular")
    customers = CustomerFactory.create_batch(300)
    QueueEntry.objects.bulk_create(
        QueueEntry(
            event=event,
            customer=c,
            status="COMPLETED" if i < 190 else "WAITING",
            score=i,
            admitted_at=opened + timedelta(seconds=60 + i * 6) if i < 190 else None,
            finished_at=opened + timedelta(seconds=90 + i * 6) if i < 190 else None,
        )
        for i, c in enumerate(customers)
    )
    # joined_at is set on insert: moved back in one statement, 0.8 s apart.
    QueueEntry.objects.filter(event=event).update(
        joined_at=ExpressionWrapper(
            Value(opened) + F("score") * Value(timedelta(seconds=0.8)),
            output_field=DateTimeField(),
        )
    )
    for minute in range(1, 19):
        moment = opened + timedelta(minutes=minute)
        claim = sell(regular, 1 + minute % 3, at=moment)
        Claim.objects.filter(pk=claim.pk).update(created_at=moment - timedelta(seconds=40))
    stuck = pay(hold_tickets(regular, 1))
    Payment.objects.filter(pk=stuck.pk).update(created_at=timezone.now() - timedelta(hours=1))
    return event


def figure(driver, key: str) -> str:
    return driver.find_element(By.CSS_SELECTOR, f'[data-key="{key}"]').text


def after_the_sell_out(event) -> None:
    """Every ticket sold; of Regular, two on resale, one withdrawn, two
    resold (refunded), one resold with its refund pending; of VIP, one
    resold whose refund failed. 25 on the waiting list, offers made."""
    regular, vip = event.tiers.get(name="Regular"), event.tiers.get(name="VIP")
    for status, refund in (("ON_RESALE", ""), ("ON_RESALE", ""), ("WITHDRAWN", ""),
                           ("RESOLD", "PROCESSED"), ("RESOLD", "PROCESSED"),
                           ("RESOLD", "PENDING")):  # fmt: skip
        returned(regular, status, refund=refund, fee=50_000)
    returned(vip, "RESOLD", refund="FAILED")
    for tier in (regular, vip):
        free = Ticket.objects.filter(tier=tier, claim__isnull=True, resale_from__isnull=True)
        sell(tier, free.count())
    on_waitlist(event, regular, n=12)
    on_waitlist(event, vip, n=6)
    on_waitlist(event, None, n=7)
    on_waitlist(event, regular, "offered", n=2)
    on_waitlist(event, regular, "accepted", n=3)
    on_waitlist(event, vip, "lapsed")


def test_the_live_dashboard_draws_the_sale_and_an_order_reads_like_one(desktop, live_server):
    driver = desktop
    client, _, organizer = organizer_login()
    event = a_sale_twenty_minutes_in(organizer)
    signed_in(driver, live_server.url, client)

    driver.get(f"{live_server.url}/admin/events/event/{event.id}/dashboard/")
    for chart in ("sold", "waiting", "admitted"):
        wait_for(
            driver,
            lambda d, c=chart: d.find_element(By.ID, f"fq-chart-{c}").get_attribute("data-last")
            and d.find_elements(By.CSS_SELECTOR, f"#fq-chart-{c} canvas"),
            what=f"the {chart} chart",
        )
    sold = int(driver.find_element(By.ID, "fq-chart-sold").get_attribute("data-last"))
    assert sold == sum(1 + m % 3 for m in range(1, 19))
    assert driver.title.endswith("| FairQueue")
    assert "Django administration" not in driver.page_source
    icon = driver.find_element(By.CSS_SELECTOR, "link[rel=icon]").get_attribute("href")
    assert icon.endswith("/static/favicon.svg")
    # Only the payments needing attention that there are, each linked to the
    # organizer's own payments of that reason (platform staff resolve them).
    attention = [li.text for li in driver.find_elements(By.CSS_SELECTOR, ".fq-attention li")
                 if li.is_displayed()]  # fmt: skip
    assert len(attention) == 1 and attention[0].startswith("1 ")
    (link,) = [a for a in driver.find_elements(By.CSS_SELECTOR, ".fq-attention a")
               if a.is_displayed()]  # fmt: skip
    assert link.get_attribute("href").endswith("/admin/payments/payment/?attention=stuck")
    assert driver.find_element(By.LINK_TEXT, "Door check-in").get_attribute("href").endswith(
        f"/events/{event.id}/check-in/"
    )
    shot(driver, "console-dashboard")

    # A sale now: the next refresh redraws the chart.
    claim = sell(event.tiers.get(name="VIP"), 2)
    wait_for(
        driver,
        lambda d: d.find_element(By.ID, "fq-chart-sold").get_attribute("data-last")
        == str(sold + 2),
        15,
        "the chart redrawn with the new sale",
    )

    # After the sell-out: tickets came back for resale, the waiting list waits.
    after_the_sell_out(event)
    driver.get(f"{live_server.url}/admin/events/event/{event.id}/dashboard/")
    wait_for(
        driver,
        lambda d: figure(d, "after_waiting") == "25",
        what="the waiting list's length",
    )
    assert figure(driver, "eta") == "sold out"
    assert figure(driver, "after_on_resale") == "2"
    assert figure(driver, "refunds_paid") == "NGN 9,000.00"
    assert figure(driver, "refunds_failed_count") == "1"
    assert figure(driver, "after_any_waiting_revenue") == "NGN 35,000.00"
    attention = [li.text for li in driver.find_elements(By.CSS_SELECTOR, ".fq-attention li")
                 if li.is_displayed()]  # fmt: skip
    assert attention == ["1 Stuck (INITIALIZING/PENDING past the stale threshold)",
                         "1 Refund failed"]  # fmt: skip
    shot(driver, "console-dashboard-after-sale")

    # The order: titled for a person, with its tickets' printed codes.
    tickets = issued_tickets_issue(claim_id=claim.pk)
    driver.get(f"{live_server.url}/admin/console/order/{claim.pk}/change/")
    title = driver.find_element(By.TAG_NAME, "h2").text + driver.find_element(By.ID, "content").text
    assert f"{event.name} · 2 x VIP · {claim.customer.email} · paid" in title
    codes = [a.text for a in driver.find_elements(By.CSS_SELECTOR, ".fq-order-tickets a")]
    assert codes == [ticket_code_display(t.code) for t in tickets]
    shot(driver, "console-order")

    # Staff refunding it after one ticket came in at the door: warned first.
    payment = Payment.objects.get(claim=claim)
    issued_ticket_check_in(event_id=event.id, code=tickets[0].code, actor="staff:door1")
    staff = Client()
    staff.force_login(UserFactory(password=None, is_superuser=True, is_staff=True))
    signed_in(driver, live_server.url, staff)
    driver.get(f"{live_server.url}/admin/payments/payment/?q={payment.reference}")
    selected = f'input[name="_selected_action"][value="{payment.pk}"]'
    driver.find_element(By.CSS_SELECTOR, selected).click()
    Select(driver.find_element(By.NAME, "action")).select_by_value("refund")
    driver.find_element(By.NAME, "index").click()
    warning = wait_for(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".fq-refund-warning"))
    assert "Already at the door: 1 ticket below was checked in." in warning.text
    assert ticket_code_display(tickets[0].code) in warning.text
    shot(driver, "console-refund-checked-in")
    assert Claim.objects.get(pk=claim.pk).status == "CONFIRMED"  # nothing refunded yet


def y4m_of(text: str, path: Path, size: int = 480) -> Path:
    """A short video of a QR code (the fake camera's picture): YUV 4:2:0
    frames, black modules on white, centred."""
    matrix = segno.make(text, error="m", micro=False).matrix
    modules = len(matrix) + 8  # the quiet zone
    scale = size * 3 // 4 // modules
    offset = (size - modules * scale) // 2 + 4 * scale
    luma = bytearray(b"\xff" * size * size)
    for y, row in enumerate(matrix):
        for x, dark in enumerate(row):
            if dark:
                for dy in range(scale):
                    start = (offset + y * scale + dy) * size + offset + x * scale
                    luma[start : start + scale] = b"\x00" * scale
    chroma = b"\x80" * (size * size // 2)
    frame = b"FRAME\n" + bytes(luma) + chroma
    path.write_bytes(f"YUV4MPEG2 W{size} H{size} F10:1 Ip A1:1 C420jpeg\n".encode() + frame * 10)
    return path


def test_the_door_checks_a_ticket_in_through_the_camera(live_server, tmp_path):
    client, _, organizer = organizer_login()
    event = sale(tickets=10, organizer=organizer)
    claim = hold_tickets(event.tiers.get(name="Regular"), 2, status="CONFIRMED")
    first, _ = issued_tickets_issue(claim_id=claim.pk)
    camera = y4m_of(ticket_code_display(first.code), tmp_path / "ticket.y4m")
    flags = (
        "--use-fake-device-for-media-stream",
        "--use-fake-ui-for-media-stream",
        f"--use-file-for-fake-video-capture={camera}",
    )
    with chromium(390, 844, flags) as driver:
        signed_in(driver, live_server.url, client)
        driver.get(f"{live_server.url}/events/{event.id}/check-in/")
        assert text_of(driver, "door-count") == "0 of 2 in"
        # An organizer's page: no buyers' "Sign in".
        assert "Sign in" not in driver.find_element(By.CSS_SELECTOR, ".site-header").text
        wait_for(driver, lambda d: d.find_element(By.ID, "camera-button").is_enabled(),
                 what="the camera found")  # fmt: skip
        driver.find_element(By.ID, "camera-button").click()
        wait_for(
            driver, lambda d: text_of(d, "checkin-verdict") == "Welcome in", 30, "the scan"
        )
        wait_for(driver, lambda d: text_of(d, "door-count") == "1 of 2 in", what="the count")
        assert IssuedTicket.objects.get(pk=first.pk).status == "USED"
        shot(driver, "door-camera")
        assert csp_violations(driver) == []
