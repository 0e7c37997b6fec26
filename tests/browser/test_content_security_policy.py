"""A Content-Security-Policy on every answer (fairqueue/csp.py): scripts
from our own origin only, never inline; and the pages, the admin and the API
docs still work under it in a real browser, with no refusal in the console
(the desktop and phone fixtures check the console after every browser test,
the whole journey included)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.test import Client
from selenium.webdriver.common.by import By

from claims.models import IssuedTicket
from claims.services import claim_confirm
from events.management.commands.bootstrap_demo import ensure_organizer_group
from payments.models import Payment
from tests.browser.conftest import sale, sign_in_directly
from tests.support.browser import csp_violations, text_of, wait_for, wait_panel
from tests.support.factories import CustomerFactory, UserFactory
from tests.support.payments import make_claim
from tests.support.sales import on_sale, pay

HEADER = "Content-Security-Policy"


def directives(policy: str) -> dict[str, list[str]]:
    return {
        name: values
        for name, *values in (part.split() for part in policy.split(";") if part.strip())
    }


class Scripts(HTMLParser):
    """The page's <script> elements that would run, and inline handlers."""

    def __init__(self) -> None:
        super().__init__()
        self.inline: list[str] = []
        self.handlers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.handlers += [name for name in attributes if name.startswith("on")]
        runs = attributes.get("type") != "application/json"  # json_script is data
        if tag == "script" and "src" not in attributes and runs:
            self.inline.append(f"line {self.getpos()[0]}")


def inline_code(html: str) -> tuple[list[str], list[str]]:
    parser = Scripts()
    parser.feed(html)
    return parser.inline, parser.handlers


def paid_ticket() -> tuple[IssuedTicket, Payment]:
    claim = make_claim(tier=on_sale(tickets=3))
    payment = pay(claim, status="CONFIRMED")
    claim_confirm(claim_id=claim.pk)
    return IssuedTicket.objects.get(claim=claim), payment


@pytest.mark.django_db
def test_every_kind_of_answer_carries_the_policy_and_no_page_has_inline_script(client):
    ticket, payment = paid_ticket()
    event_id = ticket.event_id
    staff = UserFactory(password=None, is_superuser=True, is_staff=True)
    admin = Client()
    admin.force_login(staff)
    answers = {
        "events": client.get("/"),
        "event": client.get(f"/events/{event_id}/"),
        "waiting room": client.get(f"/events/{event_id}/queue/"),
        "sign-in": client.get("/signin/"),
        "my tickets": client.get("/tickets/"),
        "ticket": client.get(f"/tickets/{ticket.code}/"),
        "payment return": client.get("/payments/return/", {"reference": payment.reference}),
        "not found": client.get("/no-such-page/"),
        "admin login": client.get("/admin/login/"),
        "admin": admin.get("/admin/"),
        "admin event": admin.get(f"/admin/events/event/{event_id}/change/"),
        "dashboard": admin.get(f"/admin/events/event/{event_id}/dashboard/"),
        "door": admin.get(f"/events/{event_id}/check-in/"),
        "swagger": client.get("/api/docs/"),
        "swagger start-up": client.get("/api/docs/", {"script": ""}),
        "redoc": client.get("/api/redoc/"),
        "api": client.get("/api/v1/events/"),
    }

    statuses = {name: a.status_code for name, a in answers.items()}
    policies = {name: directives(a.get(HEADER, "")) for name, a in answers.items()}
    pages = {
        name: inline_code(a.content.decode())
        for name, a in answers.items()
        if a.get("Content-Type", "").startswith("text/html")
    }

    assert statuses == {**dict.fromkeys(answers, 200), "not found": 404}
    for name, policy in policies.items():
        assert policy.get("script-src") == ["'self'"], name
        assert policy.get("object-src") == ["'none'"], name
        assert policy.get("frame-ancestors") == ["'none'"], name
        assert policy.get("base-uri") == ["'self'"], name
    assert len(pages) == 15
    assert {name: code for name, code in pages.items() if code != ([], [])} == {}


@pytest.mark.django_db
def test_the_websocket_and_the_challenge_are_allowed_only_where_the_settings_put_them(
    client, settings
):
    settings.WEBSOCKET_PUBLIC_URL = "wss://ws.tickets.example.com/"
    settings.CHALLENGE_PROVIDER = "turnstile"
    settings.CHALLENGE_SITE_KEY = settings.CHALLENGE_SECRET_KEY = "k"
    settings.CHALLENGE_SCRIPT_URL = "https://challenges.cloudflare.com/turnstile/v0/api.js"
    on = directives(client.get("/signin/")[HEADER])
    settings.CHALLENGE_PROVIDER = ""
    settings.WEBSOCKET_PUBLIC_URL = ""
    settings.WS_PORT = 8001
    dev = directives(client.get("/signin/")[HEADER])
    settings.WS_PORT = None
    same_origin = directives(client.get("/signin/")[HEADER])

    assert on["connect-src"] == ["'self'", "wss://ws.tickets.example.com"]
    assert on["script-src"] == ["'self'", "https://challenges.cloudflare.com"]
    assert on["frame-src"] == ["https://challenges.cloudflare.com"]
    assert dev["connect-src"] == ["'self'", "ws://*:8001", "wss://*:8001"]
    assert dev["script-src"] == ["'self'"]
    assert "frame-src" not in dev
    assert same_origin["connect-src"] == ["'self'"]


# --- in Chromium ------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_customer_pages_work_under_the_policy(desktop, stack):
    driver = desktop
    event = sale(tickets=20, batch=5)
    customer = CustomerFactory()
    ticket, _ = paid_ticket()
    IssuedTicket.objects.filter(pk=ticket.pk).update(customer=customer)

    driver.get(stack.url + "/")
    wait_for(driver, lambda d: d.find_element(By.TAG_NAME, "h1"), what="the event list")
    sign_in_directly(driver, stack.url, customer)
    driver.get(f"{stack.url}/events/{event.id}/queue/")
    wait_panel(driver, "join")
    driver.find_element(By.ID, "join-button").click()
    wait_panel(driver, "waiting")
    # The WebSocket opened on daphne's own port: the policy lets the page connect there.
    wait_for(driver, lambda d: "Live" in text_of(d, "live"), what="the socket")
    driver.get(stack.url + "/tickets/")
    wait_for(
        driver,
        lambda d: d.execute_script(
            "const i = document.querySelector('#ticket-list img'); return i && i.naturalWidth;"
        ),
        what="My tickets, from the API",
    )
    driver.get(f"{stack.url}/tickets/{ticket.code}/")
    driver.execute_script("window.print = () => { document.body.dataset.printed = 'yes'; };")
    driver.find_element(By.ID, "print-button").click()
    wait_for(
        driver,
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-printed") == "yes",
        what="the print button's script (a static file now)",
    )

    assert csp_violations(driver) == []


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_admin_and_the_api_docs_work_under_the_policy(desktop, stack):
    driver = desktop
    event = sale(tickets=20, batch=5)
    user = UserFactory(password=None, is_superuser=True, is_staff=True)
    user.groups.add(ensure_organizer_group())
    admin = Client()
    admin.force_login(user)
    driver.get(stack.url + "/")
    driver.add_cookie({"name": "sessionid", "value": admin.cookies["sessionid"].value, "path": "/"})

    driver.get(f"{stack.url}/admin/events/event/{event.id}/change/")
    # The admin's own scripts run: the tier inline's "Add another" row appears.
    rows = len(driver.find_elements(By.CSS_SELECTOR, "tr.form-row.dynamic-tiers"))
    driver.find_element(By.CSS_SELECTOR, "tr.add-row a").click()
    wait_for(
        driver,
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.form-row.dynamic-tiers")) == rows + 1,
        what="the admin's inline script adding a tier row",
    )
    driver.get(f"{stack.url}/admin/events/event/{event.id}/dashboard/")
    wait_for(driver, lambda d: d.find_element(By.TAG_NAME, "h1"), what="the dashboard")
    driver.get(stack.url + "/api/docs/")
    wait_for(
        driver,
        lambda d: len(d.find_elements(By.CSS_SELECTOR, ".opblock")) > 10,
        30,
        "Swagger UI's operations",
    )
    assert csp_violations(driver) == []

    driver.get(stack.url + "/api/redoc/")
    wait_for(
        driver,
        lambda d: re.search(r"FairQueue API", d.find_element(By.TAG_NAME, "body").text),
        30,
        "ReDoc's page",
    )
    # ReDoc asks Redocly's CDN for their logo: the policy refuses it (nothing
    # comes from elsewhere; offline is the same), and the logo removes itself.
    wait_for(
        driver,
        lambda d: not d.find_elements(By.CSS_SELECTOR, 'img[alt="redocly logo"]'),
        what="the CDN's logo gone",
    )
    refused = csp_violations(driver)
    assert refused and all("https://cdn.redoc.ly/redoc/logo-mini.svg" in m for m in refused)
