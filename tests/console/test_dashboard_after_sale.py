"""The event dashboard after the sale: tickets returned (on resale now,
resold, withdrawn), the refunds resales brought (paid, pending, failed),
the waiting list per tier with the revenue it represents, and its offers;
in a fixed number of queries however many tiers the event has."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.admin import event_of
from tests.support.after_sale import on_waitlist, returned
from tests.support.factories import TierFactory

pytestmark = pytest.mark.django_db


def data_url(event) -> str:
    return f"/admin/events/event/{event.pk}/dashboard/data/"


def test_the_dashboard_counts_returns_refunds_and_the_waiting_list(org_a):
    client, _, organizer = org_a
    event = event_of(organizer, inventory=10)  # Regular, NGN 5,000
    regular = event.tiers.get()
    vip = TierFactory(event=event, name="VIP", inventory=4, price=2_000_000)
    returned(regular, "ON_RESALE")
    returned(regular, "ON_RESALE")
    returned(regular, "WITHDRAWN")
    returned(regular, "RESOLD", refund="PROCESSED", fee=50_000)
    returned(vip, "RESOLD", refund="PROCESSED")
    returned(vip, "RESOLD", refund="FAILED")
    returned(regular, "RESOLD", refund="PENDING")
    returned(regular, "RESOLD")  # its refund not opened yet
    returned(regular, "CANCELLED")  # the purchase was refunded: not a return any more
    on_waitlist(event, regular, n=3)
    on_waitlist(event, vip, n=2)
    on_waitlist(event, None, n=4)
    on_waitlist(event, vip, "offered")
    on_waitlist(event, regular, "accepted", n=2)
    on_waitlist(event, None, "lapsed")
    on_waitlist(event, regular, "left")

    response = client.get(f"/admin/events/event/{event.pk}/dashboard/")

    figures = response.context["figures"]
    assert figures[f"after_{regular.id}_on_resale"] == "2"
    assert figures[f"after_{regular.id}_resold"] == "3"
    assert figures[f"after_{regular.id}_withdrawn"] == "1"
    assert figures[f"after_{vip.id}_resold"] == "2"
    assert (figures["after_on_resale"], figures["after_resold"], figures["after_withdrawn"]) == (
        "2",
        "5",
        "1",
    )
    # 4,500 (5,000 less a 500 fee) + 20,000
    assert figures["refunds_paid"] == "NGN 24,500.00"
    assert figures["refunds_paid_count"] == "2"
    assert (figures["refunds_pending_count"], figures["refunds_pending"]) == (
        "2",
        "NGN 10,000.00",
    )
    assert (figures["refunds_failed_count"], figures["refunds_failed"]) == ("1", "NGN 20,000.00")
    assert figures[f"after_{regular.id}_waiting"] == "3"
    assert figures[f"after_{regular.id}_waiting_revenue"] == "NGN 15,000.00"
    assert figures[f"after_{vip.id}_waiting_revenue"] == "NGN 40,000.00"
    # Any tier, at the cheapest tier's price.
    assert (figures["after_any_waiting"], figures["after_any_waiting_revenue"]) == (
        "4",
        "NGN 20,000.00",
    )
    assert (figures["after_waiting"], figures["after_waiting_revenue"]) == ("9", "NGN 75,000.00")
    assert (figures["offers_open"], figures["offers_taken"], figures["offers_lapsed"]) == (
        "1",
        "2",
        "1",
    )
    # The failed one is also a payment needing attention.
    assert figures["attention_refund_failed"] == "1"
    page = response.content.decode()
    assert f'<td data-key="after_{vip.id}_resold">2</td>' in page
    assert '<td data-key="after_any_waiting">4</td>' in page
    assert "after_any_resold" not in figures  # "any tier" is the waiting list's only
    assert "<tr><td>any tier</td><td>—</td><td>—</td><td>—</td>" in page
    assert client.get(data_url(event)).json()["refunds_failed"] == "NGN 20,000.00"


def queries_of_the_dashboard(client, event) -> int:
    client.get(data_url(event))  # sessions and caches warmed
    with CaptureQueriesContext(connection) as seen:
        assert client.get(data_url(event)).status_code == 200
    return len(seen.captured_queries)


def test_the_dashboard_reads_a_fixed_number_of_queries_however_many_tiers(org_a):
    client, _, organizer = org_a
    event = event_of(organizer, inventory=10)
    regular = event.tiers.get()
    returned(regular, "RESOLD", refund="PROCESSED")
    on_waitlist(event, regular)
    one_tier = queries_of_the_dashboard(client, event)

    for n in range(3):
        tier = TierFactory(event=event, name=f"Tier {n}", inventory=3, price=100_000 * (n + 1))
        returned(tier, "ON_RESALE")
        returned(tier, "RESOLD", refund="FAILED")
        on_waitlist(event, tier, n=2)
        on_waitlist(event, tier, "offered")

    assert queries_of_the_dashboard(client, event) == one_tier
