"""The waiting list of a sold-out event: the API contract, the first
minute's draw, offers made when tickets free up and used with the claim like
an admission, lapsed offers passing on, the sale's end closing the list."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from claims.domain import ReleaseReason
from claims.models import Claim
from claims.services import claim_release
from console.invariants import waitlist as waitlist_checks
from console.invariants.base import Options
from events.models import Event
from fairqueue.redis import get_redis
from queueing.domain import QueueStatus, WaitlistStatus
from queueing.models import QueueEntry, WaitlistEntry, WaitlistState
from queueing.services.waitlist_offers import waitlist_tick_event
from queueing.store import queue_store
from queueing.tasks import admission_tick
from tests.support.factories import CustomerFactory, TierFactory, bearer
from tests.support.sales import admit_directly, claim_one, make_customers, on_sale

pytestmark = pytest.mark.django_db


def sold_out(tickets: int = 2, **event_fields):
    """An event whose every ticket is claimed (SOLD_OUT), and the claims."""
    tier = on_sale(tickets=tickets, **event_fields)
    claims = [claim_one(tier, a) for a in admit_directly(tier.event, make_customers(tickets))]
    Event.objects.filter(pk=tier.event_id).update(status="SOLD_OUT")
    return tier, claims


def url(event_id) -> str:
    return f"/api/v1/events/{event_id}/waitlist/"


def past_first_minute(event_id) -> None:
    """The list opened more than a minute ago and its draw is made: later
    joiners keep their order."""
    opened = timezone.now() - timedelta(minutes=2)
    WaitlistState.objects.update_or_create(
        event_id=event_id, defaults={"opened_at": opened, "drawn_at": opened}
    )


def joined(api, event_id, customer, **body):
    response = api.post(url(event_id), body, format="json", **bearer(customer))
    assert response.status_code == 201, response.content
    return response.json()


def test_join_is_refused_while_tickets_are_on_sale(api):
    tier = on_sale(tickets=3)
    customer = CustomerFactory()
    response = api.post(url(tier.event_id), {}, format="json", **bearer(customer))
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "waitlist_closed"
    assert WaitlistEntry.objects.count() == 0
    assert WaitlistState.objects.count() == 0


def test_join_see_and_leave(api):
    tier, _ = sold_out()
    past_first_minute(tier.event_id)
    first, second = CustomerFactory(), CustomerFactory()
    body = joined(api, tier.event_id, first, tier_id=str(tier.id))
    assert body["status"] == "waiting"
    assert body["position"] == 1
    assert body["tier_id"] == str(tier.id)
    assert body["admission_token"] is None
    assert joined(api, tier.event_id, second)["position"] == 2  # any tier: behind the first

    again = api.post(url(tier.event_id), {}, format="json", **bearer(first))
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "already_on_waitlist"
    assert WaitlistEntry.objects.filter(customer=first).count() == 1

    assert api.get(url(tier.event_id), **bearer(second)).json()["position"] == 2
    assert api.delete(url(tier.event_id), **bearer(first)).status_code == 204
    assert api.get(url(tier.event_id), **bearer(first)).json()["status"] == "left"
    assert api.get(url(tier.event_id), **bearer(second)).json()["position"] == 1
    assert api.delete(url(tier.event_id), **bearer(first)).status_code == 404


def test_bad_input_is_a_4xx_and_writes_nothing(api):
    tier, _ = sold_out()
    customer = CustomerFactory()
    other_tier = TierFactory()
    for body in ({"tier_id": "nope"}, {"tier_id": str(other_tier.id)}):
        response = api.post(url(tier.event_id), body, format="json", **bearer(customer))
        assert response.status_code == 422, response.content
    assert api.post(url(tier.event_id), {}, format="json").status_code == 401
    assert WaitlistEntry.objects.count() == 0


def test_a_holder_cannot_join(api):
    tier, claims = sold_out()
    holder = claims[0].customer
    response = api.post(url(tier.event_id), {}, format="json", **bearer(holder))
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "already_claimed"
    assert WaitlistEntry.objects.count() == 0


def test_the_first_minute_is_drawn_and_later_joiners_keep_their_order(api):
    tier, _ = sold_out()
    early = make_customers(5)
    for customer in early:
        body = joined(api, tier.event_id, customer)
        assert body["position"] is None  # drawn at the end of the first minute
        assert body["draw_at"] is not None
    assert waitlist_tick_event(event_id=tier.event_id).drawn == 0  # not before the minute is up
    WaitlistState.objects.filter(event_id=tier.event_id).update(
        opened_at=timezone.now() - timedelta(seconds=61)
    )
    late = make_customers(2)
    assert [joined(api, tier.event_id, c)["position"] for c in late] == [6, 7]
    report = waitlist_tick_event(event_id=tier.event_id)
    assert report.drawn == 5
    ranks = sorted(
        WaitlistEntry.objects.filter(customer__in=early).values_list("score", flat=True)
    )
    assert ranks == [1, 2, 3, 4, 5]
    positions = [
        api.get(url(tier.event_id), **bearer(c)).json()["position"] for c in early + late
    ]
    assert sorted(positions[:5]) == [1, 2, 3, 4, 5]
    assert positions[5:] == [6, 7]


def test_a_freed_ticket_is_offered_and_claimed_like_an_admission(
    api, eager_tasks, mailoutbox, run_on_commit
):
    tier, claims = sold_out(max_tickets_per_customer=4)
    past_first_minute(tier.event_id)
    first, second = CustomerFactory(), CustomerFactory()
    joined(api, tier.event_id, first)
    joined(api, tier.event_id, second, tier_id=str(tier.id))

    assert not QueueEntry.objects.filter(customer=first).exists()  # no ticket free: no offer
    # The release's news (tickets_freed) starts the offer round once it commits.
    run_on_commit(claim_release, claim_id=claims[0].id, reason=ReleaseReason.CUSTOMER)

    offer = api.get(url(tier.event_id), **bearer(first)).json()
    assert offer["status"] == "offered"
    assert offer["offer_tier_id"] == str(tier.id)
    assert offer["offer_expires_at"]
    assert api.get(url(tier.event_id), **bearer(second)).json()["position"] == 1
    assert [m.to for m in mail.outbox] == [[first.email]]
    # The queue's own position endpoint tells the same admission (the page's path).
    position = api.get(f"/api/v1/events/{tier.event_id}/queue/position/", **bearer(first))
    assert position.json()["status"] == "ADMITTED"

    too_many = api.post(
        f"/api/v1/events/{tier.event_id}/claims/",
        {"tier_id": str(tier.id), "quantity": 2, "admission_token": offer["admission_token"]},
        format="json",
        **bearer(first),
    )
    assert too_many.status_code == 422  # an offer is one ticket, whatever the event allows
    assert too_many.json()["error"]["details"] == {"quantity": 2, "max": 1}
    claimed = api.post(
        f"/api/v1/events/{tier.event_id}/claims/",
        {"tier_id": str(tier.id), "quantity": 1, "admission_token": offer["admission_token"]},
        format="json",
        **bearer(first),
    )
    assert claimed.status_code == 201, claimed.content
    waitlist_tick_event(event_id=tier.event_id)
    assert api.get(url(tier.event_id), **bearer(first)).json()["status"] == "accepted"
    assert api.get(url(tier.event_id), **bearer(second)).json()["status"] == "waiting"
    assert Claim.objects.filter(customer=first, status="CLAIMED").count() == 1


def test_an_offer_is_for_its_tier_only(api):
    tier, claims = sold_out(tickets=1)
    vip = TierFactory(event=tier.event, name="VIP", inventory=1, price=9_000_000)
    hold = admit_directly(tier.event, make_customers(1))[0]
    claim_one(vip, hold)
    past_first_minute(tier.event_id)
    customer = CustomerFactory()
    joined(api, tier.event_id, customer, tier_id=str(tier.id))
    claim_release(claim_id=claims[0].id, reason=ReleaseReason.CUSTOMER)
    waitlist_tick_event(event_id=tier.event_id)
    token = api.get(url(tier.event_id), **bearer(customer)).json()["admission_token"]
    other = api.post(
        f"/api/v1/events/{tier.event_id}/claims/",
        {"tier_id": str(vip.id), "quantity": 1, "admission_token": token},
        format="json",
        **bearer(customer),
    )
    assert other.status_code == 403
    assert other.json()["error"]["code"] == "admission_invalid"
    assert not Claim.objects.filter(customer=customer).exists()


def test_a_lapsed_offer_passes_to_the_next(api):
    tier, claims = sold_out()
    past_first_minute(tier.event_id)
    first, second = CustomerFactory(), CustomerFactory()
    joined(api, tier.event_id, first)
    joined(api, tier.event_id, second)
    claim_release(claim_id=claims[0].id, reason=ReleaseReason.EXPIRED)
    assert waitlist_tick_event(event_id=tier.event_id).offered == [str(first.id)]
    assert waitlist_tick_event(event_id=tier.event_id).offered == []  # one ticket, one offer
    admitted = queue_store().admitted_key(tier.event_id)
    assert get_redis().zscore(admitted, str(first.id)) is not None  # Redis has the admission too

    QueueEntry.objects.filter(customer=first, status=QueueStatus.ADMITTED).update(
        admission_expires_at=timezone.now() - timedelta(seconds=1)
    )
    report = waitlist_tick_event(event_id=tier.event_id)
    assert report.offered == [str(second.id)]
    assert get_redis().zscore(admitted, str(first.id)) is None
    assert api.get(url(tier.event_id), **bearer(first)).json()["status"] == "lapsed"
    assert api.get(url(tier.event_id), **bearer(second)).json()["status"] == "offered"
    for check in (waitlist_checks.offers_within_free_tickets,):
        result = check(Event.objects.get(pk=tier.event_id), Options(now=timezone.now()))
        assert result.ok, result.detail


def test_the_end_of_the_sale_closes_the_list(api):
    tier, _ = sold_out()
    past_first_minute(tier.event_id)
    customer = CustomerFactory()
    joined(api, tier.event_id, customer)
    Event.objects.filter(pk=tier.event_id).update(
        status="ENDED", sale_end=timezone.now() - timedelta(seconds=1)
    )
    assert waitlist_tick_event(event_id=tier.event_id).closed == 1
    assert api.get(url(tier.event_id), **bearer(customer)).json()["status"] == "closed"
    refused = api.post(url(tier.event_id), {}, format="json", **bearer(CustomerFactory()))
    assert refused.json()["error"]["code"] == "waitlist_closed"
    assert WaitlistEntry.objects.filter(status=WaitlistStatus.WAITING).count() == 0


def test_the_admission_tick_offers_what_a_lost_enqueue_left(api):
    """The release's news never reached a worker (here: the release's
    after-commit work does not run): beat's admission tick makes the offer."""
    tier, claims = sold_out()
    past_first_minute(tier.event_id)
    customer = CustomerFactory()
    joined(api, tier.event_id, customer)
    claim_release(claim_id=claims[0].id, reason=ReleaseReason.EXPIRED)
    assert api.get(url(tier.event_id), **bearer(customer)).json()["status"] == "waiting"

    admission_tick.run()

    assert api.get(url(tier.event_id), **bearer(customer)).json()["status"] == "offered"
