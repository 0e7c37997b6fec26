"""The server-rendered customer pages: event list, event page, sign-in.

Real Postgres and Redis; the pages' script (storefront/static/storefront/) runs the
waiting room against the API and is checked in a browser, not here."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from fairqueue.money import money_format
from inventory.services import inventory_sync_event
from tests.support.factories import EventFactory, TierFactory
from tests.support.sales import hold_tickets

pytestmark = pytest.mark.django_db


def page_config(response) -> dict:
    html = response.content.decode()
    start = html.index('<script id="fq-config" type="application/json">') + len(
        '<script id="fq-config" type="application/json">'
    )
    return json.loads(html[start : html.index("</script>", start)])


# --- money -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("amount", "currency", "text"),
    [
        (500_000, "NGN", "NGN 5,000.00"),
        (1, "NGN", "NGN 0.01"),
        (0, "NGN", "NGN 0.00"),
        (123_456_789, "usd", "USD 1,234,567.89"),
        (5_000, "XOF", "XOF 5,000"),
    ],
)
def test_money_shows_minor_units_as_currency(amount, currency, text):
    assert money_format(amount, currency) == text


# --- event list ----------------------------------------------------------------


def test_the_list_shows_public_events_with_prices_and_status(client):
    on_sale = EventFactory(name="Afrobeats Live", venue="Eko Hotel")
    TierFactory(event=on_sale, name="Regular", price=500_000)
    TierFactory(event=on_sale, name="VIP", price=2_500_000)
    paused = EventFactory(name="Jazz Night", status="PAUSED")
    TierFactory(event=paused, price=1_000_000)
    EventFactory(name="Secret Draft Show", status="DRAFT")

    response = client.get("/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "Afrobeats Live" in html
    assert "Eko Hotel" in html
    assert "from NGN 5,000.00" in html  # the cheapest of two prices
    assert "NGN 25,000.00" not in html  # only the "from" price is listed
    assert "Jazz Night" in html
    assert "NGN 10,000.00" in html
    assert "from NGN 10,000.00" not in html  # one price: no "from"
    assert html.count('class="badge badge-on_sale">On sale<') == 1
    assert html.count('class="badge badge-paused">Paused<') == 1
    assert f'href="/events/{on_sale.id}/"' in html
    assert "Secret Draft Show" not in html
    assert "(minor units)" not in html


def test_the_list_labels_sold_out_ended_and_upcoming_sales(client):
    EventFactory(name="Gone Gig", status="SOLD_OUT")
    EventFactory(name="Old Gig", status="ENDED")
    EventFactory(
        name="Soon Gig",
        sale_start=timezone.now() + timedelta(days=1),
        sale_end=timezone.now() + timedelta(days=2),
    )
    # Status still ACTIVE but the window has closed: shown as ended.
    EventFactory(
        name="Lapsed Gig",
        sale_start=timezone.now() - timedelta(days=2),
        sale_end=timezone.now() - timedelta(days=1),
    )

    html = client.get("/").content.decode()

    assert html.count(">Sold out<") == 1
    assert html.count(">Sale ended<") == 2
    assert html.count(">Opens soon<") == 1
    assert ">On sale<" not in html


def test_ended_sales_are_listed_after_the_others(client):
    now = timezone.now()
    EventFactory(name="Early Ended", status="ENDED", sale_start=now - timedelta(days=3))
    EventFactory(name="Running", sale_start=now - timedelta(days=1))
    EventFactory(name="Later", sale_start=now + timedelta(days=1), sale_end=now + timedelta(days=2))

    html = client.get("/").content.decode()

    assert html.index("Running") < html.index("Later") < html.index("Early Ended")


def test_an_empty_list_says_so(client):
    EventFactory(status="DRAFT")
    response = client.get("/")
    assert response.status_code == 200
    assert "No events on sale yet" in response.content.decode()


# --- event page ----------------------------------------------------------------


def test_the_event_page_shows_tiers_prices_and_availability(client):
    event = EventFactory(name="Afrobeats Live", max_tickets_per_customer=4)
    regular = TierFactory(event=event, name="Regular", price=500_000, inventory=10, sort_order=0)
    vip = TierFactory(event=event, name="VIP", price=2_500_000, inventory=2, sort_order=1)
    hold_tickets(regular, 3)
    hold_tickets(vip, 2)

    response = client.get(f"/events/{event.id}/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "Afrobeats Live" in html
    assert f'data-tier-available="{regular.id}">7 left<' in html
    assert f'data-tier-available="{vip.id}">Sold out<' in html
    assert "NGN 5,000.00" in html
    assert "NGN 25,000.00" in html
    assert "4 tickets per customer" in html
    assert f'href="/events/{event.id}/queue/">Join the waiting room<' in html


def test_the_waiting_room_is_its_own_page_with_the_tiers_and_the_limit(client, settings):
    settings.ADMISSION_INTERVAL_SECONDS = 5.0
    event = EventFactory(name="Afrobeats Live", max_tickets_per_customer=4, admission_batch_size=50)
    regular = TierFactory(event=event, name="Regular", price=500_000, inventory=10, sort_order=0)
    vip = TierFactory(event=event, name="VIP", price=2_500_000, inventory=2, sort_order=1)
    hold_tickets(regular, 3)
    hold_tickets(vip, 2)

    response = client.get(f"/events/{event.id}/queue/")

    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="join-button"' in html
    assert 'id="announce" class="sr-only" role="status" aria-live="polite"' in html
    quantity = html[html.index('<select id="quantity"') :]
    quantity = quantity[: quantity.index("</select>")]
    assert quantity.count('<option value="') == 4  # quantity 1..max_tickets_per_customer
    assert "storefront/queue/main.js" in html
    config = page_config(response)
    assert config["event_id"] == str(event.id)
    assert config["sale_state"] == "on_sale"
    assert config["max_tickets_per_customer"] == 4
    assert (config["admission_batch_size"], config["admission_interval_seconds"]) == (50, 5.0)
    tiers = [(t["name"], t["price"], t["price_display"], t["available"]) for t in config["tiers"]]
    assert tiers == [
        ("Regular", 500_000, "NGN 5,000.00", 7),
        ("VIP", 2_500_000, "NGN 25,000.00", 0),
    ]
    assert config["api"] == "/api/v1/"
    assert config["signin_url"] == "/signin/"


def test_availability_comes_from_the_redis_counters_when_they_exist(client):
    event = EventFactory()
    tier = TierFactory(event=event, inventory=10)
    inventory_sync_event(event_id=event.id)
    hold_tickets(tier, 4)  # Postgres only: the counter is approximate until reconciled

    before = page_config(client.get(f"/events/{event.id}/queue/"))["tiers"][0]["available"]
    inventory_sync_event(event_id=event.id)
    after = page_config(client.get(f"/events/{event.id}/queue/"))["tiers"][0]["available"]

    assert (before, after) == (10, 6)


def test_large_availability_is_grouped_in_thousands(client):
    event = EventFactory()
    tier = TierFactory(event=event, inventory=1_200)

    html = client.get(f"/events/{event.id}/").content.decode()
    room = client.get(f"/events/{event.id}/queue/").content.decode()

    assert f'data-tier-available="{tier.id}">1,200 left<' in html
    assert "(1,200 left)" in room  # the tier choice shown once admitted


def test_an_ended_event_offers_no_queue(client):
    event = EventFactory(status="ENDED")
    TierFactory(event=event)

    response = client.get(f"/events/{event.id}/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "This sale has ended." in html
    assert "/queue/" not in html  # no way into the waiting room
    assert page_config(client.get(f"/events/{event.id}/queue/"))["sale_state"] == "ended"


def test_a_paused_event_says_so_and_still_lets_customers_join(client):
    event = EventFactory(status="PAUSED")
    TierFactory(event=event)

    response = client.get(f"/events/{event.id}/")

    html = response.content.decode()
    assert "Sales are paused. You can join or keep your place" in html
    assert f'href="/events/{event.id}/queue/">Join the waiting room<' in html
    assert page_config(client.get(f"/events/{event.id}/queue/"))["sale_state"] == "paused"


def test_a_draft_event_page_is_404(client):
    event = EventFactory(name="Secret Draft Show", status="DRAFT")
    TierFactory(event=event)

    response = client.get(f"/events/{event.id}/")

    assert response.status_code == 404
    html = response.content.decode()
    assert response["Content-Type"].startswith("text/html")
    assert "Page not found" in html
    assert "Secret Draft Show" not in html


def test_an_unknown_event_page_is_a_404_page_not_a_500(client):
    response = client.get(f"/events/{uuid.uuid4()}/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    assert "There is no such event" in response.content.decode()


def test_a_malformed_event_id_is_404_not_500(client):
    response = client.get("/events/not-a-uuid/")
    assert response.status_code == 404


def test_the_waiting_room_of_a_draft_or_unknown_event_is_404(client):
    draft = EventFactory(status="DRAFT")
    assert client.get(f"/events/{draft.id}/queue/").status_code == 404
    assert client.get(f"/events/{uuid.uuid4()}/queue/").status_code == 404


def test_an_upcoming_sale_counts_down_in_the_waiting_room(client):
    opens = timezone.now() + timedelta(hours=2)
    event = EventFactory(sale_start=opens, sale_end=opens + timedelta(days=1))

    response = client.get(f"/events/{event.id}/queue/")

    config = page_config(response)
    assert config["sale_state"] == "upcoming"
    assert config["sale_start"] == opens.isoformat()
    assert config["prequeue_opens_at"] is None
    assert 'id="opens-countdown" role="timer"' in response.content.decode()


# --- WebSocket URL given to the page --------------------------------------------


def test_the_websocket_url_defaults_to_this_host_on_ws_port(client, settings):
    settings.WEBSOCKET_PUBLIC_URL = ""
    settings.WS_PORT = 8001
    event = EventFactory()

    config = page_config(client.get(f"/events/{event.id}/queue/", HTTP_HOST="tickets.test:8000"))

    assert config["ws_url"] == "ws://tickets.test:8001"


def test_the_websocket_url_is_the_page_origin_without_ws_port(client, settings):
    settings.WEBSOCKET_PUBLIC_URL = ""
    settings.WS_PORT = None
    event = EventFactory()

    config = page_config(client.get(f"/events/{event.id}/queue/", HTTP_HOST="tickets.test:8080"))

    assert config["ws_url"] == "ws://tickets.test:8080"


def test_the_websocket_url_setting_wins(client, settings):
    settings.WEBSOCKET_PUBLIC_URL = "wss://live.tickets.test/"
    settings.WS_PORT = 8001
    event = EventFactory()

    config = page_config(client.get(f"/events/{event.id}/queue/"))

    assert config["ws_url"] == "wss://live.tickets.test"


# --- sign-in ---------------------------------------------------------------------


def test_the_signin_page_renders_the_email_and_code_forms(client):
    response = client.get("/signin/?next=/events/abc/")

    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="email-form"' in html
    assert 'autocomplete="email"' in html
    assert 'id="code-form"' in html
    assert 'autocomplete="one-time-code"' in html
    assert page_config(response) == {
        "api": "/api/v1/", "next": "/events/abc/", "codes_in_terminal": False,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("backend", "said"),
    [
        ("django.core.mail.backends.console.EmailBackend", True),  # make run
        ("django.core.mail.backends.smtp.EmailBackend", False),
    ],
)
def test_in_development_the_signin_page_says_the_code_is_in_the_terminal(
    client, settings, backend, said
):
    settings.EMAIL_BACKEND = backend
    response = client.get("/signin/")
    html = response.content.decode()
    assert ("printed in the terminal running <code>make run</code>" in html) is said
    # The code step then says where the code is, not "check your inbox" (the
    # script reads this), and never promises an email.
    assert page_config(response)["codes_in_terminal"] is said
    assert ("We sent a code to" in html) is not said
    assert ("Email me a code" in html) is not said


@pytest.mark.parametrize(
    "next_url", ["https://evil.test/", "//evil.test/x", "javascript:alert(1)", "events/x/"]
)
def test_the_signin_page_only_returns_to_this_site(client, next_url):
    response = client.get("/signin/", {"next": next_url})
    assert page_config(response)["next"] == "/"
