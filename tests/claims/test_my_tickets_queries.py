"""``GET me/tickets/`` reads a fixed number of queries however many tickets
a customer holds, and whatever happened to them (returned, resold and
refunded, sent on, across events)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.claims.resale_support import admitted, my_tickets, resale_event, return_ticket
from tests.support.factories import bearer

pytestmark = pytest.mark.django_db


def queries_of_my_tickets(api, customer) -> tuple[int, dict]:
    with CaptureQueriesContext(connection) as seen:
        mine = my_tickets(api, customer)
    return len(seen.captured_queries), mine


def test_my_tickets_reads_a_fixed_number_of_queries(
    api, shop, gateway, django_capture_on_commit_callbacks
):
    # One customer's two tickets: one returned, resold and refunded, one sent on.
    first = resale_event(tickets=2)
    seller, second_buyer = admitted(first.event, 2)
    bought = shop(first, seller, quantity=2)
    resold, sent = bought.tickets()
    assert return_ticket(api, bought, resold, django_capture_on_commit_callbacks).status_code == 202
    shop(first, second_buyer)  # takes the returned ticket: resold, its refund sent
    to = api.post(
        f"/api/v1/tickets/{sent.code}/transfer/",
        {"email": "friend@example.com"},
        format="json",
        **bearer(seller.customer),
    )
    assert to.status_code in (200, 201, 202), to.content
    baseline, mine = queries_of_my_tickets(api, seller.customer)
    assert sorted(t["status"] for t in mine["results"]) == ["resold", "valid"]

    # Two more tickets, of another event: one on resale.
    other = resale_event(tickets=2)
    (again,) = admit_same(other, seller)
    later = shop(other, again, quantity=2)
    on_resale, _kept = later.tickets()
    assert (
        return_ticket(api, later, on_resale, django_capture_on_commit_callbacks).status_code == 202
    )

    count, mine = queries_of_my_tickets(api, seller.customer)

    statuses = sorted(t["status"] for t in mine["results"])
    assert statuses == ["on_resale", "resold", "valid", "valid"]
    by_status = {t["status"]: t for t in mine["results"]}
    assert by_status["resold"]["refund"]["status"] in ("pending", "requested")
    (transfer,) = [t["transfer"] for t in mine["results"] if t["transfer"]]
    assert transfer["to_email"] == "friend@example.com"
    assert count == baseline, "more tickets (or steps) must not cost more queries"


def admit_same(tier, who):
    """The same customer admitted to another event's sale."""
    from tests.support.sales import admit_directly

    return admit_directly(tier.event, [who.customer])
