"""The organizer sees an event's waiting list: its length per tier wanted,
the offers open, and the revenue the waiting entries represent."""

import pytest

from queueing.models import WaitlistEntry
from tests.support.admin import change_url, event_of
from tests.support.factories import CustomerFactory, TierFactory

pytestmark = pytest.mark.django_db


def test_the_event_page_shows_the_waiting_list_per_tier_and_its_revenue(org_a, org_b):
    client_a, _, organizer_a = org_a
    event = event_of(organizer_a, status="SOLD_OUT")
    regular = event.tiers.get()  # NGN 5,000.00
    vip = TierFactory(event=event, name="VIP", inventory=5, price=900_000)
    for tier, status in [(regular, "waiting"), (regular, "waiting"), (vip, "offered"),
                         (None, "waiting"), (regular, "left")]:  # fmt: skip
        WaitlistEntry.objects.create(
            event=event, customer=CustomerFactory(), tier=tier, status=status, score=1
        )

    page = client_a.get(change_url(event)).content.decode()

    assert "<tr><td>Regular</td><td>2</td><td>0</td><td>NGN 10,000.00</td></tr>" in page
    assert "<tr><td>VIP</td><td>0</td><td>1</td><td>NGN 0.00</td></tr>" in page
    assert "<tr><td>any tier</td><td>1</td><td>0</td><td>NGN 5,000.00</td></tr>" in page
    # Another organizer sees neither the event nor its list.
    assert org_b[0].get(change_url(event)).status_code in (302, 403, 404)
