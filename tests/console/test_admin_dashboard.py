"""The event dashboard: every figure right for a sale in progress, the JSON
it refreshes from, scoped like the event itself."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from claims.domain import ReleaseReason
from claims.services import claim_release
from payments.models import Payment
from queueing import services
from queueing.models import QueueEntry
from tests.claims.resale_support import admitted, buy, resale_event, return_ticket
from tests.support.admin import event_of
from tests.support.factories import TierFactory
from tests.support.sales import admit_directly, hold_tickets, join, make_customers, pay, sell

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
        sell(regular, 1)
    Payment.objects.filter(claim=sell(vip, 1)).update(dispute="open")
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
    # Only the reasons with payments show (the page hides a line whose count
    # falls to zero as it refreshes), each linked to the organizer's own
    # payments of that reason; platform staff resolve them.
    disputed = '<strong data-key="attention_disputed">1</strong>'
    assert (
        '<li data-hide-zero="attention_disputed"><a href="/admin/payments/payment/'
        f'?attention=disputed">{disputed}'
    ) in page
    assert len(re.findall(r'<li data-hide-zero="attention_\w+" hidden>', page)) == 5
    assert "Platform staff resolve stuck, blocked and disputed payments" in page
    stuck = client.get("/admin/payments/payment/?attention=stuck")
    assert [p.claim.event_id for p in stuck.context["cl"].result_list] == [event.pk]


def test_staff_who_may_open_the_payments_get_each_reason_linked(sale, superuser_client):
    event = sale[1]

    page = superuser_client.get(dashboard_url(event)).content.decode()

    assert (
        '<a href="/admin/payments/payment/?attention=disputed">'
        '<strong data-key="attention_disputed">1</strong>'
    ) in page
    assert page.count('href="/admin/payments/payment/?attention=') == 8
    assert superuser_client.get("/admin/payments/payment/?attention=stuck").status_code == 200


def test_the_json_refresh_has_the_same_figures_and_follows_the_sale(sale):
    client, event, regular, _ = sale
    first = client.get(dashboard_url(event)).context["figures"]

    data = client.get(dashboard_url(event) + "data/").json()
    # The moment read and the charts (a step may pass between the two reads) aside.
    assert {k: v for k, v in data.items() if k not in ("read_at", "series")} == {
        k: v for k, v in first.items() if k not in ("read_at", "series")
    }

    services.admission_tick_event(event_id=event.id)
    sell(regular, 1)

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


def test_the_charts_follow_the_sale_over_time(org_a):
    """Sold so far, the line's length and admissions per minute, one point
    per step from the sale's opening, and the sell-out projected."""
    client, _, organizer = org_a
    now = timezone.now()
    event = event_of(organizer, inventory=10, sale_start=now - timedelta(minutes=10))
    tier = event.tiers.get()
    for minutes_ago, quantity in ((8, 2), (2, 3)):
        sell(tier, quantity, at=now - timedelta(minutes=minutes_ago))
    for _ in range(4):
        join(event)
    entries = QueueEntry.objects.filter(event=event)
    entries.update(joined_at=now - timedelta(minutes=9))
    admitted = list(entries.values_list("pk", flat=True)[:3])
    QueueEntry.objects.filter(pk__in=admitted).update(
        status="COMPLETED", admitted_at=now - timedelta(minutes=5)
    )

    series = client.get(dashboard_url(event) + "data/").json()["series"]

    def at(name: str, minutes_ago: float):
        moment = (now - timedelta(minutes=minutes_ago)).timestamp()
        return series[name][max(i for i, t in enumerate(series["t"]) if t <= moment)]

    assert series["t"][0] == round(event.sale_start.timestamp(), 3)
    assert [at("sold", m) for m in (9, 7, 3, 0)] == [0, 2, 2, 5]
    assert [at("waiting", m) for m in (9.5, 8, 4, 0)] == [0, 4, 1, 1]
    # Admissions per minute over the minute up to each point.
    assert [at("admitted_per_minute", m) for m in (5.5, 4.5, 3.5)] == [0, 3, 0]
    # 5 tickets taken in the last 5 minutes: 5 left at 1 a minute.
    (start, sold), (end, inventory) = series["projection"]
    assert (sold, inventory, round(end - start)) == (5, 10, 300)


def test_a_slow_sale_charts_the_sale_so_far_and_says_where_the_pace_leads(org_a):
    """Two tickets of 5,000 in an hour of a month-long sale: the chart spans
    the hour and looks ahead one more, the sold line is not flattened by the
    inventory's, and the estimate reads in days."""
    client, _, organizer = org_a
    now = timezone.now()
    event = event_of(organizer, inventory=5000, sale_start=now - timedelta(hours=1),
                     sale_end=now + timedelta(days=30))  # fmt: skip
    sell(event.tiers.get(), 2, at=now - timedelta(minutes=2))

    figures = client.get(dashboard_url(event) + "data/").json()
    series = figures["series"]

    # 2 tickets in 5 minutes: 4,998 left at 0.4 a minute, 8 days 16 h.
    assert figures["eta"] == "8 days 16 h"
    start, end = series["x_range"]
    assert start == round(event.sale_start.timestamp(), 3)
    assert 3590 <= end - now.timestamp() <= 3610  # as far ahead as the sale ran
    assert series["inventory"] is None
    (_, sold_now), (_, ahead) = series["projection"]
    assert (sold_now, ahead) == (2, 26)  # 2 + 0.4 a minute for an hour
    sell_out = (now + timedelta(minutes=4998 / 0.4)).timestamp()
    end = series["projection_end"]
    assert (end["kind"], end["sold"], end["inventory"]) == ("sell_out", 5000, 5000)
    assert abs(end["at"] - sell_out) < 5
    assert series["sold"][-1] == 2


def test_a_ticket_on_resale_stays_sold_until_resold_and_revenue_counts_what_is_kept(
    api, client, sandbox, org_a, django_capture_on_commit_callbacks
):
    admin, _, organizer = org_a
    on_commit = django_capture_on_commit_callbacks
    tier = resale_event(tickets=2, organizer=organizer)  # the buyer takes both
    (first_in,) = admitted(tier.event)
    first = buy(api, client, sandbox, on_commit, tier, first_in, quantity=2)
    url = dashboard_url(tier.event) + "data/"

    assert return_ticket(api, first, first.tickets()[0], on_commit).status_code == 202
    on_resale = admin.get(url).json()

    (second_in,) = admitted(tier.event)
    buy(api, client, sandbox, on_commit, tier, second_in)
    tier_of = f"tier_{tier.pk}_"
    resold = admin.get(url).json()

    assert (on_resale["sold"], on_resale["on_resale"], on_resale["revenue"]) == (
        "2 of 2", "1", "NGN 10,000.00",
    )  # fmt: skip
    assert on_resale[tier_of + "free"] == "0"  # sold: it sells again as a resale
    # Resold: sold once, to its buyer; the first buyer is owed face value
    # less the NGN 500.00 fee, which the organizer keeps.
    assert (resold["sold"], resold["on_resale"], resold["revenue"]) == (
        "2 of 2", "0", "NGN 10,500.00",
    )  # fmt: skip
    assert resold["series"]["sold"][-1] == 2


def test_a_sale_that_ends_before_its_pace_would_sell_out_says_how_many_by_its_end(org_a):
    client, _, organizer = org_a
    now = timezone.now()
    event = event_of(organizer, inventory=5000, sale_start=now - timedelta(hours=1),
                     sale_end=now + timedelta(days=1))  # fmt: skip
    sell(event.tiers.get(), 2, at=now - timedelta(minutes=2))

    end = client.get(dashboard_url(event) + "data/").json()["series"]["projection_end"]

    # 0.4 a minute for the day left: 576 more.
    assert (end["kind"], end["sold"], end["inventory"]) == ("sale_end", 578, 5000)
    assert abs(end["at"] - event.sale_end.timestamp()) < 1
