"""The event dashboard: every figure right for a sale in progress, the JSON
it refreshes from, scoped like the event itself."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from claims.domain import ReleaseReason
from claims.services import claim_release
from payments.models import Payment
from queueing import services
from tests.support.admin import event_of
from tests.support.factories import TierFactory
from tests.support.sales import admit_directly, hold_tickets, join, make_customers, pay

pytestmark = pytest.mark.django_db


def dashboard_url(event) -> str:
    return f"/admin/events/event/{event.pk}/dashboard/"


@pytest.fixture
def sale(org_a):
    """Regular (10 x NGN 5,000) and VIP (4 x NGN 20,000): 3 Regular and 1
    VIP paid (its payment disputed at the bank), 2 Regular held unpaid (one
    with a stuck payment), 4 waiting, 1 admitted, and a refund-required
    payment."""
    client, _, organizer = org_a
    event = event_of(organizer, inventory=10)
    regular = event.tiers.get()
    vip = TierFactory(event=event, name="VIP", inventory=4, price=2_000_000)
    for _ in range(3):
        hold_tickets(regular, 1, status="CONFIRMED")
    disputed = pay(hold_tickets(vip, 1, status="CONFIRMED"))
    Payment.objects.filter(pk=disputed.pk).update(status="CONFIRMED", dispute="open")
    hold_tickets(regular, 1, status="CLAIMED")
    stuck = pay(hold_tickets(regular, 1, status="CLAIMED"))
    Payment.objects.filter(pk=stuck.pk).update(created_at=timezone.now() - timedelta(hours=1))
    # A late success for a claim released meanwhile, its ticket back on sale.
    gone = claim_release(claim_id=hold_tickets(vip, 1).pk, reason=ReleaseReason.EXPIRED)
    Payment.objects.filter(pk=pay(gone).pk).update(status="REFUND_REQUIRED")
    for _ in range(4):
        join(event)
    admit_directly(event, make_customers(1))
    return client, event, regular, vip


def test_the_dashboard_shows_the_sale(sale):
    client, event, regular, vip = sale

    response = client.get(dashboard_url(event))

    assert response.status_code == 200
    figures = response.context["figures"]
    assert figures["waiting"] == "4"
    assert figures["admitted"] == "1"
    assert figures["sold"] == "4 of 14"
    assert figures["revenue"] == "NGN 35,000.00"  # 3 x 5,000 + 20,000
    assert figures[f"tier_{regular.id}_sold"] == "3"
    assert figures[f"tier_{regular.id}_claimed"] == "2"
    assert figures[f"tier_{regular.id}_free"] == "5"
    assert figures[f"tier_{regular.id}_revenue"] == "NGN 15,000.00"
    assert figures[f"tier_{vip.id}_free"] == "3"
    assert figures[f"tier_{vip.id}_revenue"] == "NGN 20,000.00"
    assert figures["attention_stuck"] == "1"
    assert figures["attention_refund_required"] == "1"
    assert figures["attention_flagged"] == "0"
    assert figures["attention_disputed"] == "1"
    assert figures["attention_refund_failed"] == "0"
    # 6 tickets taken in the last 5 minutes (the released one gave its ticket back).
    assert figures["sell_rate"] == "1.2 tickets / min"
    assert figures["eta"] == "6 min 40 s"  # 8 free at 1.2 a minute
    assert figures["last_tick"] == "never"
    page = response.content.decode()
    assert 'data-url="/admin/events/event/' in page and "dashboard.js" in page
    assert "NGN 5,000.00" in page and "NGN 20,000.00" in page  # tier prices
    # Rendered on the server too (the script only refreshes them).
    assert f'<td data-key="tier_{regular.id}_sold">3</td>' in page
    assert f'<td data-key="tier_{vip.id}_revenue">NGN 20,000.00</td>' in page
    # Every "needs attention" filter of the staff payment list, linked to it.
    assert (
        '<a href="/admin/payments/payment/?attention=disputed">'
        '<strong data-key="attention_disputed">1</strong>'
    ) in page
    assert page.count('href="/admin/payments/payment/?attention=') == 8


def test_the_json_refresh_has_the_same_figures_and_follows_the_sale(sale):
    client, event, regular, _ = sale
    first = client.get(dashboard_url(event)).context["figures"]

    data = client.get(dashboard_url(event) + "data/").json()
    assert {k: v for k, v in data.items() if k != "read_at"} == {
        k: v for k, v in first.items() if k != "read_at"
    }

    services.admission_tick_event(event_id=event.id)
    hold_tickets(regular, 1, status="CONFIRMED")

    after = client.get(dashboard_url(event) + "data/").json()
    assert after["waiting"] == "0"
    assert after["admitted"] == "5"
    assert after["admission_rate"] == "5 / min"
    assert after[f"tier_{regular.id}_sold"] == "4"
    assert after["last_tick"].endswith(" s ago")


def test_a_sold_out_event_says_so(org_a):
    client, _, organizer = org_a
    event = event_of(organizer, inventory=2)
    hold_tickets(event.tiers.get(), 2, status="CONFIRMED")

    figures = client.get(dashboard_url(event) + "data/").json()

    assert figures["eta"] == "sold out"


def test_another_organizers_dashboard_is_not_shown(org_a, org_b):
    theirs = event_of(org_b[2], name="Their Secret Gig")

    for url in (dashboard_url(theirs), dashboard_url(theirs) + "data/"):
        response = org_a[0].get(url)
        assert response.status_code == 404
        assert "Their Secret Gig" not in response.content.decode()


def test_the_event_list_and_page_link_to_the_dashboard(org_a):
    client, _, organizer = org_a
    event = event_of(organizer)

    assert dashboard_url(event) in client.get("/admin/events/event/").content.decode()
    page = client.get(f"/admin/events/event/{event.pk}/change/").content.decode()
    assert dashboard_url(event) in page


def test_anonymous_users_are_sent_to_log_in(client):
    event = event_of(TierFactory().event.organizer)
    response = client.get(dashboard_url(event) + "data/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
